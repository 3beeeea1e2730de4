// Search over a region's candidates: the measuring order and the search budget.
//
// Budget: only the first K candidates of the measuring order (advisor order, or the heuristic order
// c0, c1, ... without accepted advice) are admitted and timed; if none of them validates, admission
// continues down the order one candidate at a time until one does. Selection is unchanged: the
// fastest validated measured candidate (selection.h). The record keeps where the selection ranked in
// the order, what the search spent and, when every candidate was measured, the regret against the
// best. The advisor ablation replays other orderings on one exhaustive measurement (ablation.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "codegen/nvrtc_compiler.h"
#include "plan/candidate.h"
#include "tune/admission.h"
#include "tune/admission_times.h"
#include "tune/selection.h"

namespace agentcompile::tune {

// How the region's candidates were searched: the measuring order, the budget and what it cost.
struct SearchRecord {
  std::vector<int> order;        // candidate indices in measuring order
  std::string order_source = "heuristic";  // "heuristic" | "advisor"
  int budget = 0;                // candidates to measure; 0: every one
  std::vector<bool> measured;    // per candidate: admitted (validated or rejected) and, if valid, timed
  int spent = 0;                 // candidates admitted
  bool exhaustive = false;       // every candidate was admitted: regret against the best is known
  std::string note;              // no GPU, continued past the budget, ablation
  struct BucketOutcome {
    std::string bucket;
    int rank = 0;                     // 1-based position of the selected candidate in `order`; 0: none
    std::optional<double> regret;     // (selected - best) / best over every candidate; unset: not measured
  };
  std::vector<BucketOutcome> buckets;
};

// A region's admission: a result per candidate (empty for those not measured), the search that chose
// them, and what admitting them cost.
struct AdmittedRegion {
  std::vector<CandidateResult> results;
  SearchRecord search;
  AdmissionTimes times;
};

// The candidates (indices, in order) a budget admits, given which candidates validate: the first
// `budget` of `order` (0: all), then further ones until one validates (if any does).
std::vector<int> budget_prefix(const std::vector<int>& order, const std::vector<bool>& validated, int budget);

// Admits a subset of a region's candidates, by index into its candidates: their results, in the
// order asked.
using AdmitFn = std::function<Expected<std::vector<CandidateResult>>(const std::vector<int>& indices)>;

// Admits admitted.search.order under admitted.search.budget through `admit`, filling
// admitted.results (one per candidate; unmeasured ones stay empty and are marked in
// admitted.search.measured). `admit` may read admitted.results: what the batches before it found.
// `region` names the region in errors.
Status admit_with_budget(const std::string& region, const std::vector<plan::Candidate>& candidates,
                         const std::vector<codegen::CompileResult>& compiled, AdmittedRegion& admitted, const AdmitFn& admit);

// After selection: the rank of each bucket's selection in the order and, if the search was
// exhaustive, its regret. `per_bucket`: results hold one timing per bucket, else one for all.
std::vector<SearchRecord::BucketOutcome> selection_outcomes(const SearchRecord& search, const std::vector<CandidateResult>& results,
                                                            const std::vector<Selection>& selections, bool per_bucket);

// A deterministic shuffle of 0..n-1 from a seed and the region id (same on every platform).
std::vector<int> random_order(size_t n, uint64_t seed, const std::string& region_id);

}  // namespace agentcompile::tune
