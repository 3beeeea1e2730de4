// Family registry and the helpers every family shares.
#include "plan/template_family.h"

#include <algorithm>

#include "plan/families.h"

namespace agentcompile::plan {

std::string RegionContext::slot_of(ir::ValueId value) const {
  const auto& inputs = region->inputs;
  if (auto it = std::find(inputs.begin(), inputs.end(), value); it != inputs.end())
    return "in" + std::to_string(it - inputs.begin());
  const auto& outputs = region->outputs;
  if (auto it = std::find(outputs.begin(), outputs.end(), value); it != outputs.end())
    return "out" + std::to_string(it - outputs.begin());
  const int producer = function->value(value).producer;
  if (producer >= 0) {
    const ir::Node& source = function->nodes[static_cast<size_t>(producer)];
    if (source.op == ir::OpKind::kWeight) {
      const auto& params = region->params;
      auto it = std::find(params.begin(), params.end(), source.string_attr("name"));
      if (it != params.end()) return "w" + std::to_string(it - params.begin());
    }
  }
  return "";
}

std::string dtype_tag(ir::DType dtype) { return std::string(ir::dtype_name(dtype)); }

const std::vector<const TemplateFamily*>& all_families() {
  static const std::vector<const TemplateFamily*> families = {&gemv_family(), &rmsnorm_family(), &embedding_family(), &elementwise_family(), &softmax_family(), &reduction_family(), &rope_kv_family(), &attention_decode_family(), &gemm_family(), &attention_prefill_family(), &cublas_family(), &attention_reference_family(), &layernorm_family(), &scan_family(), &column_family(), &copy_family(), &gather_family()};
  return families;
}

const TemplateFamily* find_family(const std::string& name) {
  for (const TemplateFamily* family : all_families())
    if (family->name() == name) return family;
  return nullptr;
}

}  // namespace agentcompile::plan
