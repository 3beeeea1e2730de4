// Region extraction (see extract.h).
#include "analysis/extract.h"

#include <algorithm>
#include <map>

namespace agentcompile::analysis {

namespace {

class Extractor {
 public:
  Extractor(const ir::Module& module, const ir::Function& function, const Region& region, ir::Module& out)
      : function_(function), region_(region), builder_(out, "region") {
    (void)module;
  }

  Status run() {
    for (size_t i = 0; i < region_.inputs.size(); ++i) {
      const ir::ValueId input = region_.inputs[i];
      mapping_[input] = builder_.arg("in" + std::to_string(i), function_.type(input));
    }
    for (int index : region_.nodes) {
      const ir::Node& node = function_.nodes[static_cast<size_t>(index)];
      std::vector<ir::ValueId> operands;
      for (ir::ValueId operand : node.operands) {
        AC_ASSIGN_OR_RETURN(ir::ValueId mapped, map(operand));
        operands.push_back(mapped);
      }
      mapping_[node.result] = builder_.op(node.op, operands, node.attrs);
    }
    for (ir::ValueId output : region_.outputs) {
      AC_ASSIGN_OR_RETURN(ir::ValueId mapped, map(output));
      builder_.result(mapped);
    }
    return builder_.finish();
  }

 private:
  // Maps a value the region reads to the extracted function, cloning sources and views on demand.
  Expected<ir::ValueId> map(ir::ValueId value) {
    if (auto it = mapping_.find(value); it != mapping_.end()) return it->second;
    const int producer = function_.value(value).producer;
    if (producer < 0)
      return error(ErrorCode::kInternal, "region reads %" + function_.value(value).name + " but it is not an input");
    const ir::Node& node = function_.nodes[static_cast<size_t>(producer)];
    if (is_source_node(node)) {  // a weight, constant or arange: the region reads or computes it itself
      const ir::ValueId weight = builder_.op(node.op, {}, node.attrs);
      mapping_[value] = weight;
      return weight;
    }
    if (is_view_node(node)) {
      AC_ASSIGN_OR_RETURN(ir::ValueId source, map(node.operands[0]));
      const ir::ValueId view = builder_.op(node.op, {source}, node.attrs);
      mapping_[value] = view;
      return view;
    }
    return error(ErrorCode::kInternal, "region reads %" + function_.value(value).name + " computed outside it");
  }

  const ir::Function& function_;
  const Region& region_;
  ir::FunctionBuilder builder_;
  std::map<ir::ValueId, ir::ValueId> mapping_;
};

}  // namespace

Expected<ir::Module> extract_region(const ir::Module& module, const ir::Function& function, const Region& region) {
  ir::Module out;
  out.name = module.name + "." + function.name + ".region" + std::to_string(region.index);
  for (const std::string& name : region.params) {
    // A region reads an alias (rows of a fused weight) as a weight of its own: the rows it needs are bound
    // by name when the artifact runs, and admission draws its own values for them, so the source the rows
    // come from is not part of the region. A rank's shard of a checkpoint tensor (tensor parallelism) is
    // likewise a whole weight of the rank's shape to the region: which part of the checkpoint it is
    // matters only when the runtime loads it, and so is a copy of another tensor in a format of its own.
    ir::ParamDecl param = *module.find_param(name);
    param.values_of.clear();
    param.alias_of.clear();
    param.alias_row = 0;
    param.shard_ranges.clear();
    param.shard_axis = 0;
    param.shard_of = 0;
    out.params.push_back(std::move(param));
  }
  for (const std::string& name : region.states) out.states.push_back(*module.find_state(name));
  AC_TRY(Extractor(module, function, region, out).run());
  return out;
}

}  // namespace agentcompile::analysis
