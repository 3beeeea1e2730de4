// Candidate enumeration, ranking, diversity and the cap.
#include "plan/planner.h"

#include <algorithm>

#include "plan/template_family.h"

namespace agentcompile::plan {

namespace {

// The node a region is built around: its matmul, attention, row op, gather, copy or side effect, else
// its first node.
const ir::Node& principal_node(const RegionContext& ctx) {
  for (ir::OpClass wanted : {ir::OpClass::kMatmul, ir::OpClass::kAttention, ir::OpClass::kScan, ir::OpClass::kReduction,
                             ir::OpClass::kSoftmax, ir::OpClass::kNorm, ir::OpClass::kRope, ir::OpClass::kGather,
                             ir::OpClass::kLayout, ir::OpClass::kSideEffect})
    for (size_t i = 0; i < ctx.size(); ++i)
      if (ir::op_info(ctx.node(static_cast<int>(i)).op).op_class == wanted) return ctx.node(static_cast<int>(i));
  return ctx.node(0);
}

// Why nothing implements a region, in the user's terms: "no template family implements cumprod over
// axis 1 of f32[4096, 4000] (model.py:17 in forward); region ops: mul cumprod".
std::string unimplemented_reason(const RegionContext& ctx) {
  const ir::Node& node = principal_node(ctx);
  std::string text = "no template family implements " + std::string(ir::op_name(node.op));
  if (node.has_attr("axis")) text += " over axis " + std::to_string(node.int_attr("axis"));
  text += " of ";
  for (size_t i = 0; i < node.operands.size(); ++i)
    text += (i ? ", " : "") + ctx.function->type(node.operands[i]).to_string();
  if (node.operands.empty()) text += ctx.function->type(node.result).to_string();
  text += " in a " + std::string(analysis::category_name(ctx.summary->category)) + " region";
  if (!node.loc.empty()) text += " (" + node.loc + ")";
  if (ctx.size() > 1) {
    text += "; region ops:";
    for (size_t i = 0; i < ctx.size(); ++i) text += " " + std::string(ir::op_name(ctx.node(static_cast<int>(i)).op));
  }
  return text;
}

}  // namespace

std::vector<RegionPlan> plan_function(const ir::Module& module, const ir::Function& function,
                                      const analysis::RegionPartition& partition,
                                      const std::vector<analysis::UniqueRegion>& unique, const DeviceProfile& device,
                                      const PlannerOptions& options) {
  std::vector<RegionPlan> plans;
  for (const analysis::UniqueRegion& entry : unique) {
    RegionPlan plan;
    plan.function = function.name;
    plan.unique_id = entry.id;
    plan.sites = entry.sites;
    plan.summary = entry.summary;
    RegionContext ctx{&module, &function, &partition.regions[static_cast<size_t>(entry.sites.front())], &plan.summary};

    std::vector<Candidate> all;
    for (const TemplateFamily* family : all_families()) {
      if (options.library_matmuls && ctx.region->kind == analysis::RegionKind::kMatmul && !family->library()) continue;
      auto candidates = family->candidates(ctx, device);
      if (!candidates) continue;
      plan.families_matched.push_back(family->name());
      for (Candidate& c : *candidates)
        if (options.split_tf32 || !c.params.count("split_tf32")) all.push_back(std::move(c));
    }
    plan.enumerated = static_cast<int>(all.size());
    if (all.empty()) {
      plan.unplanned_reason = unimplemented_reason(ctx);
      plans.push_back(std::move(plan));
      continue;
    }
    // Deterministic ranking: score, then name (stable across runs and machines).
    std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.name() < b.name();
    });
    // Diversity: the best candidate of every family and of every form within a family first, then
    // fill by score; the fallback stays.
    std::vector<Candidate> kept;
    auto keep = [&](const Candidate& c) {
      for (const auto& k : kept)
        if (k.name() == c.name()) return;
      if (static_cast<int>(kept.size()) < options.max_candidates) kept.push_back(c);
    };
    for (const auto& c : all)
      if (c.fallback) keep(c);
    for (const std::string& family : plan.families_matched)
      for (const auto& c : all)
        if (c.family == family) {
          keep(c);
          break;
        }
    std::vector<std::pair<std::string, std::string>> forms_kept;
    for (const auto& c : all) {
      if (c.form.empty()) continue;
      const auto form = std::make_pair(c.family, c.form);
      if (std::find(forms_kept.begin(), forms_kept.end(), form) != forms_kept.end()) continue;
      forms_kept.push_back(form);
      keep(c);
    }
    for (const auto& c : all) keep(c);
    std::stable_sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) {
      if (a.score != b.score) return a.score > b.score;
      return a.name() < b.name();
    });
    for (size_t i = 0; i < kept.size(); ++i) kept[i].id = "c" + std::to_string(i);
    plan.candidates = std::move(kept);
    plans.push_back(std::move(plan));
  }
  return plans;
}

}  // namespace agentcompile::plan
