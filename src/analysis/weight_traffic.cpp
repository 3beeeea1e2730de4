// Weight bytes per token of a function (see weight_traffic.h).
#include "analysis/weight_traffic.h"

#include <map>

#include "ir/quant.h"

namespace agentcompile::analysis {

WeightTraffic weight_traffic(const ir::Module& module, const std::string& function_name) {
  WeightTraffic traffic;
  const ir::Function* f = module.find_function(function_name);
  if (!f) return traffic;
  std::map<std::string, bool> table_only;  // parameter -> every read is an embedding's table
  std::map<ir::ValueId, std::string> param_of;
  for (const ir::Node& node : f->nodes)
    if (node.op == ir::OpKind::kWeight) {
      param_of[node.result] = node.string_attr("name");
      table_only.emplace(node.string_attr("name"), true);
    }
  for (const ir::Node& node : f->nodes)
    for (size_t i = 0; i < node.operands.size(); ++i)
      if (auto it = param_of.find(node.operands[i]); it != param_of.end())
        if (!(node.op == ir::OpKind::kEmbedding && i == 0)) table_only[it->second] = false;
  for (const auto& [name, rows_only] : table_only) {
    const ir::ParamDecl* param = module.find_param(name);
    if (!param || !ir::shape_is_static(param->type.shape)) continue;
    double bytes = static_cast<double>(ir::tensor_bytes(param->type));
    if (rows_only && !param->type.shape.empty() && param->type.shape[0].value > 0) bytes /= static_cast<double>(param->type.shape[0].value);
    traffic.bytes += bytes;
    if (ir::is_quantized(param->type.dtype)) {
      traffic.quantized_bytes += bytes;
      ++traffic.quantized_params;
    }
  }
  return traffic;
}

double floor_ms(double bytes, double copy_gb_per_s) {
  if (copy_gb_per_s <= 0) return 0;
  return bytes / (copy_gb_per_s * 1e9) * 1e3;
}

}  // namespace agentcompile::analysis
