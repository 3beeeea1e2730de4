// Advise (DESIGN.md, "advise"): each region's measuring order. The advisor (src/advisor) is asked
// where its scope says semantics help, and what it says is checked against the region's own
// candidates; accepted priorities and hints order the candidates, anything else is rejected and
// counted. Without accepted advice the order is the planner's heuristic one. The search budget that
// admission applies to the order is recorded here (none while the ablation measures everything).
// After generate, candidates NVRTC could not compile may be diagnosed: recorded, never compiled.
#include "advisor/validate.h"
#include "codegen/render.h"
#include "pipeline/stages.h"

namespace agentcompile::pipeline {

Advice advise_order(const Plan& plan, advisor::Advisor& advisor, const CompileOptions& options, const ProgressFn& say) {
  Advice out;
  for (const PlannedRegion& region : plan.regions) {
    AdvisedRegion advised;
    advised.advice = advisor.advise(region.id, region.plan);
    advised.search.order = advisor::advised_order(region.plan.candidates, advised.advice.verdict);
    advised.search.order_source =
        advised.advice.verdict.priority.empty() && advised.advice.verdict.hints.empty() ? "heuristic" : "advisor";
    advised.search.budget = options.search.ablate_advisor ? 0 : options.search.budget;
    out.regions.push_back(std::move(advised));
  }
  if (advisor.enabled()) say("[2/5] " + advice_totals(out, advisor).value("line", ""));
  return out;
}

nlohmann::json advice_totals(const Advice& advice, const advisor::Advisor& advisor) {
  std::vector<const advisor::RegionAdvice*> regions;
  for (const auto& region : advice.regions) regions.push_back(&region.advice);
  const advisor::AdviceCounts counts = advisor::count_advice(regions);
  nlohmann::json totals = advisor.settings();
  totals["counts"] = advisor::counts_json(counts);
  totals["line"] = advisor::counts_line(totals.value("backend", ""), counts);
  return totals;
}

void diagnose_failures(const Plan& plan, const Generated& generated, advisor::Advisor& advisor, Advice& advice) {
  if (!advisor.enabled()) return;
  for (size_t r = 0; r < plan.regions.size(); ++r) {
    const PlannedRegion& region = plan.regions[r];
    for (size_t i = 0; i < region.plan.candidates.size(); ++i) {
      const codegen::CompileResult& compiled = generated.compiled[r][i];
      if (!compiled.ok && codegen::has_generated_launch(region.plan.candidates[i]))
        advice.regions[r].advice.diagnoses.push_back(advisor.diagnose(region.id, region.plan, region.plan.candidates[i], compiled.log));
    }
  }
}

}  // namespace agentcompile::pipeline
