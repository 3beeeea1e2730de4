// Template families: what the planner knows about each kernel template under src/kernels.
//
// A family answers, CUTLASS-style: can it implement this region (match: the mapping of its roles
// to the region's interface), which parameter choices are valid on this device and how promising
// each is (param_space: the hardware filter and the heuristics), how a choice is named and how it
// is launched. Rendering the source of a choice is codegen's job (src/codegen/renderers).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "ir/graph.h"
#include "plan/candidate.h"
#include "plan/device_profile.h"

namespace agentcompile::plan {

struct RegionContext {
  const ir::Module* module = nullptr;
  const ir::Function* function = nullptr;
  const analysis::Region* region = nullptr;
  const analysis::RegionSummary* summary = nullptr;

  const ir::Node& node(int i) const { return function->nodes[static_cast<size_t>(region->nodes[static_cast<size_t>(i)])]; }
  size_t size() const { return region->nodes.size(); }
  // Interface slot of a value: "in<i>" for an input, "out<i>" for an output, "w<i>" for a weight,
  // or "" when the value is internal to the region.
  std::string slot_of(ir::ValueId value) const;
};

class TemplateFamily {
 public:
  virtual ~TemplateFamily() = default;
  virtual std::string name() const = 0;
  virtual std::string template_file() const = 0;
  virtual std::optional<Match> match(const RegionContext& ctx) const = 0;

  struct Choice {
    ParamSet params;
    double score = 0;  // higher first
    std::vector<std::string> notes;
    // How the choice computes the region, where a family has several ways ("split", "cluster"):
    // the planner keeps the best choice of every form, so a capped space still measures each.
    std::string form;
  };
  // Every parameter choice valid on this device (shared memory, threads, registers, alignment).
  virtual std::vector<Choice> param_space(const Match& match, const DeviceProfile& device) const = 0;
  virtual std::string kernel_name(const Match& match, const ParamSet& params) const = 0;
  virtual std::vector<Launch> launches(const Match& match, const ParamSet& params) const = 0;
  virtual int64_t workspace_bytes_per_token(const Match&, const ParamSet&) const { return 0; }
  virtual int64_t workspace_bytes_fixed(const Match&, const ParamSet&) const { return 0; }
};

// Every family, in a fixed order.
const std::vector<const TemplateFamily*>& all_families();
const TemplateFamily* find_family(const std::string& name);

// Short dtype tag for kernel names: f16, bf16, f32.
std::string dtype_tag(ir::DType dtype);

}  // namespace agentcompile::plan
