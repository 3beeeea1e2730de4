// Template families: what the planner knows about each kernel template under src/kernels.
//
// A family answers, CUTLASS-style: can it implement this region (match: its typed record of the
// region, the mapping of its roles to the region's interface), which parameter choices are valid on
// this device and how promising each is (param_space: the hardware filter and the heuristics), how
// a choice is named and how it is launched. A candidate carries the family's configuration record
// (a FamilyConfig: the match and the choice); rendering its source is codegen's job
// (src/codegen/renderers, which reads the same record).
//
// A family registers itself with AC_REGISTER_FAMILY in its own file; the build collects those lines
// into the registry (cmake/template_families.cmake), so adding a family edits no shared file.
#pragma once

#include <memory>
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

// What the planner sees of a family.
class TemplateFamily {
 public:
  virtual ~TemplateFamily() = default;
  virtual std::string name() const = 0;
  virtual std::string template_file() const = 0;
  // A library call (cuBLAS) rather than a generated kernel: what --cublas-matmuls keeps for matmul regions.
  virtual bool library() const { return false; }
  // The candidate of every parameter choice valid on this device (maybe none), in the family's order;
  // nullopt when the family cannot implement the region.
  virtual std::optional<std::vector<Candidate>> candidates(const RegionContext& ctx, const DeviceProfile& device) const = 0;
};

// Fills what every candidate derives from its family, its configuration and its launches: the
// family and template, the serialized views, source class, fusion and the fallback mark.
Candidate complete_candidate(const TemplateFamily& family, Candidate candidate);

// A family written against its own records: MatchT is what it learns from a region, Config (a
// FamilyConfig) one candidate's whole configuration, the match and a parameter choice.
template <class MatchT, class Config>
class TypedFamily : public TemplateFamily {
 public:
  struct Choice {
    explicit Choice(Config c, double s = 0, std::vector<std::string> n = {}) : config(std::move(c)), score(s), notes(std::move(n)) {}
    Config config;
    double score = 0;  // higher first
    std::vector<std::string> notes;
    // How the choice computes the region, where a family has several ways ("split", "cluster"):
    // the planner keeps the best choice of every form, so a capped space still measures each.
    std::string form;
  };
  virtual std::optional<MatchT> match(const RegionContext& ctx) const = 0;
  // Every parameter choice valid on this device (shared memory, threads, registers, alignment).
  virtual std::vector<Choice> param_space(const MatchT& match, const DeviceProfile& device) const = 0;
  virtual std::string kernel_name(const Config& config) const = 0;
  virtual std::vector<Launch> launches(const Config& config) const = 0;
  // The header under src/kernels that holds a choice's code, where a family has several.
  virtual std::string template_file_of(const Config&) const { return template_file(); }
  virtual int64_t workspace_bytes_per_token(const Config&) const { return 0; }
  virtual int64_t workspace_bytes_fixed(const Config&) const { return 0; }

  std::optional<std::vector<Candidate>> candidates(const RegionContext& ctx, const DeviceProfile& device) const final {
    const std::optional<MatchT> m = match(ctx);
    if (!m) return std::nullopt;
    std::vector<Candidate> out;
    for (Choice& choice : param_space(*m, device)) {
      auto config = std::make_shared<const Config>(std::move(choice.config));
      Candidate c;
      c.launches = launches(*config);
      c.spelled_name = kernel_name(*config);
      c.workspace_bytes_per_token = workspace_bytes_per_token(*config);
      c.workspace_bytes_fixed = workspace_bytes_fixed(*config);
      c.score = choice.score;
      c.notes = std::move(choice.notes);
      c.form = std::move(choice.form);
      c.config = std::move(config);
      Candidate done = complete_candidate(*this, std::move(c));
      done.template_file = template_file_of(static_cast<const Config&>(*done.config));
      out.push_back(std::move(done));
    }
    return out;
  }
};

// One family as its file registers it.
struct FamilyRegistration {
  const char* name = "";  // as registered (the family's name())
  int order = 0;
  const TemplateFamily* family = nullptr;
};

// Registers `Family` (a TemplateFamily) under `name` with the planner; write it at the start of a
// line, in namespace agentcompile::plan, in the family's file under src/plan/families/.
// cmake/template_families.cmake finds the line and lists name##_family_registration() in the
// registry it generates. `order` places the family among the others: families match a region in
// ascending order, which is the order of their candidates among equal scores and of the diversity
// filter's picks (gemv 10, rmsnorm 20, embedding 30, elementwise 40, softmax 50, reduction 60,
// rope_kv 70, attention_decode 80, gemm 90, attention_prefill 100, cublas 110, attention_reference
// 120, layernorm 130, scan 140, columns 150, copy 160, gather 170).
#define AC_REGISTER_FAMILY(name, order, Family)                          \
  ::agentcompile::plan::FamilyRegistration name##_family_registration() { \
    static const Family family;                                         \
    return {#name, order, &family};                                     \
  }

// Every registered family (the generated registry).
std::vector<FamilyRegistration> registered_families();

// Every family, in ascending order.
const std::vector<const TemplateFamily*>& all_families();
const TemplateFamily* find_family(const std::string& name);

// Short dtype tag for kernel names: f16, bf16, f32.
std::string dtype_tag(ir::DType dtype);

}  // namespace agentcompile::plan
