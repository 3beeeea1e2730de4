// Plan (DESIGN.md, "plan"): per function its buckets, and per unique region a bounded, ranked
// candidate space for the target (plan/planner.h) with the sizes its candidates will be validated and
// timed at (plan/sizes.h). Regions no family matched keep an empty space, with the reason said.
#include <chrono>

#include "pipeline/stages.h"

namespace agentcompile::pipeline {

Plan plan_candidates(const CapturedModel& model, const Analysis& analysis, const Target& target, const CompileOptions& options,
                     const ProgressFn& say) {
  const auto start = std::chrono::steady_clock::now();
  const ir::Module& module = model.module.module;
  const int64_t max_tokens = model.source.config.max_position_embeddings;
  const plan::PlannerOptions planner{options.max_candidates, options.library_matmuls, !options.no_tf32};
  Plan out;
  for (const AnalyzedFunction& analyzed : analysis.functions) {
    const ir::Function& function = *analyzed.function;
    emit::CompiledFunction f;
    f.name = function.name;
    f.buckets = plan::buckets_for(function, max_tokens, analyzed.run_tokens);
    f.unique_of_region.assign(analyzed.partition.regions.size(), -1);
    for (auto& region_plan : plan::plan_function(module, function, analyzed.partition, analyzed.unique, target.profile, planner)) {
      PlannedRegion region;
      region.id = function.name + ".r" + std::to_string(region_plan.unique_id);
      for (int site : region_plan.sites) f.unique_of_region[static_cast<size_t>(site)] = static_cast<int>(out.regions.size());
      region.sizes = plan::region_sizes(function.name, region_plan.summary, f.buckets);
      region.plan = std::move(region_plan);
      out.candidates += region.plan.candidates.size();
      out.regions.push_back(std::move(region));
    }
    f.partition = analyzed.partition;
    out.functions.push_back(std::move(f));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& r : out.regions)
    if (r.plan.candidates.empty()) say("  " + r.id + ": no candidates: " + r.plan.unplanned_reason);
  say("[2/5] plan: " + std::to_string(out.candidates) + " candidates (at most " + std::to_string(options.max_candidates) + " per region)");
  return out;
}

}  // namespace agentcompile::pipeline
