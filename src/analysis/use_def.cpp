// Use-def computation and view resolution.
#include "analysis/use_def.h"

namespace agentcompile::analysis {

UseDef compute_use_def(const ir::Function& function) {
  UseDef facts;
  facts.users.resize(function.values.size());
  facts.is_result.assign(function.values.size(), false);
  for (size_t i = 0; i < function.nodes.size(); ++i)
    for (ir::ValueId operand : function.nodes[i].operands) facts.users[static_cast<size_t>(operand)].push_back(static_cast<int>(i));
  for (ir::ValueId result : function.results) facts.is_result[static_cast<size_t>(result)] = true;
  return facts;
}

ir::ValueId storage_root(const ir::Function& function, ir::ValueId value) {
  while (true) {
    const int producer = function.value(value).producer;
    if (producer < 0) return value;
    const ir::Node& node = function.nodes[static_cast<size_t>(producer)];
    if (node.op != ir::OpKind::kReshape && node.op != ir::OpKind::kView) return value;
    value = node.operands[0];
  }
}

}  // namespace agentcompile::analysis
