// Select (DESIGN.md, "measure & select"): one candidate per region and bucket of its function, by the
// policy of tune/selection.h: with a GPU, the fastest validated candidate at the bucket's timing (the
// fallback when none beats it); without, the heuristic order's first compiled candidate, unmeasured.
// Each pick's rank in the measuring order (and its regret, when every candidate was measured) is
// recorded now, before the chain timing may change a pick: it judges the search, not the chain.
#include <algorithm>

#include "pipeline/stages.h"

namespace agentcompile::pipeline {

Selected select_kernels(const Plan& plan, const Generated& generated, const Admitted& admitted, const Target& target) {
  Selected out;
  out.regions.resize(plan.regions.size());
  out.outcomes.resize(plan.regions.size());
  for (size_t r = 0; r < plan.regions.size(); ++r) {
    const PlannedRegion& region = plan.regions[r];
    if (target.gpu && region.plan.candidates.empty()) continue;  // nothing was admitted: no pick, no outcome
    const auto f = std::find_if(plan.functions.begin(), plan.functions.end(),
                                [&](const emit::CompiledFunction& fn) { return fn.name == region.plan.function; });
    const tune::AdmittedRegion& measured = admitted.regions[r];
    std::vector<tune::Selection>& picks = out.regions[r];
    // A collective region's one candidate, its NCCL call, is taken as it is: over several ranks it
    // cannot run in one process, so it is checked end to end (a rank's tokens against one GPU's).
    const bool collective = region.plan.summary.category == analysis::Category::kCollective;
    for (size_t b = 0; b < f->buckets.size(); ++b)
      picks.push_back(collective ? tune::Selection{f->buckets[b].name, 0, "collective: NCCL, the one candidate (not validated or timed alone)", false}
                      : target.gpu ? tune::select_measured(region.plan.candidates, measured.results, region.sizes.timing_index(b), f->buckets[b].name)
                                   : tune::select_unmeasured(generated.compiled[r], f->buckets[b].name));
    out.outcomes[r] = tune::selection_outcomes(measured.search, measured.results, picks, target.gpu && region.sizes.per_bucket);
  }
  return out;
}

}  // namespace agentcompile::pipeline
