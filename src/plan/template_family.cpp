// Family registry and the helpers every family shares.
#include "plan/template_family.h"

#include <algorithm>

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

Candidate complete_candidate(const TemplateFamily& family, Candidate c) {
  c.family = family.name();
  c.template_file = family.template_file();
  c.match = c.config->match_view();
  c.params = c.config->params_view();
  c.fallback = c.config->fallback();
  bool any_library = false;
  for (const auto& launch : c.launches) any_library |= launch.library;
  c.source_class = any_library ? "library" : "generated";
  c.fusion = c.launches.size() == 1 || !any_library ? "full" : "partial";
  return c;
}

const std::vector<const TemplateFamily*>& all_families() {
  static const std::vector<const TemplateFamily*> families = [] {
    std::vector<FamilyRegistration> registered = registered_families();
    // By order; the name breaks a tie, so the order never depends on the registry's listing.
    std::sort(registered.begin(), registered.end(), [](const FamilyRegistration& a, const FamilyRegistration& b) {
      return a.order != b.order ? a.order < b.order : a.family->name() < b.family->name();
    });
    std::vector<const TemplateFamily*> out;
    for (const FamilyRegistration& r : registered) out.push_back(r.family);
    return out;
  }();
  return families;
}

const TemplateFamily* find_family(const std::string& name) {
  for (const TemplateFamily* family : all_families())
    if (family->name() == name) return family;
  return nullptr;
}

}  // namespace agentcompile::plan
