// What the decode layer's chain timing (sequence_timing.h) tries, and how its steps feed each other.
//
// After admission, the regions of one decode layer are timed together as a chain. Each region offers
// its validated generated candidates within kAlternativeSlack of its best time alone (at most
// kMaxAlternatives, fastest first), the pick made alone always among them; library launches are left
// out (a chain is a graph of generated kernels). A step's inputs are linked to what the steps before
// it in the layer wrote, or to what the layer before wrote (the residual stream).
#pragma once

#include <vector>

#include "analysis/regions.h"
#include "ir/graph.h"
#include "ir/shape.h"
#include "plan/candidate.h"
#include "tune/admission.h"
#include "tune/sequence_timing.h"

namespace agentcompile::tune {

// A candidate within this fraction of the region's best time alone may be picked in the chain.
// Below admission's early-stop margin (kEarlyStopMargin), so a candidate that stopped timing early
// could never have been an alternative here.
constexpr double kAlternativeSlack = 0.15;
// Alternatives per region: the chain's search times every pair of neighbours' combinations.
constexpr size_t kMaxAlternatives = 4;

// Whether a candidate makes a library call (cuBLAS) rather than only generated launches.
bool has_library_launch(const plan::Candidate& candidate);

// A region's alternatives at timing `timing` (candidate indices): validated, generated, within the
// slack of the best, fastest first; `current` (the pick made alone) always among them.
std::vector<int> chain_alternatives(const std::vector<plan::Candidate>& candidates, const std::vector<CandidateResult>& results,
                                    size_t timing, int current);

// Per region of `layer` (one layer's sites, in order): its inputs that a region of the layer writes,
// earlier in `layer` or in `previous_layer` (the same regions one layer before), resolved through
// views at `at`. Inputs no region of the unit writes are not linked, nor KV-cache rows (a kv_append's
// result), which stay with each copy's own cache.
std::vector<std::vector<SequenceLink>> layer_links(const ir::Function& function, const std::vector<const analysis::Region*>& previous_layer,
                                                   const std::vector<const analysis::Region*>& layer, const ir::SymbolBindings& at);

}  // namespace agentcompile::tune
