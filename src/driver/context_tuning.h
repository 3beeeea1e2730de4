// After admission: the decode layer's kernels chosen in their chain (tune/sequence_timing.h).
//
// The unit is the decode function's layer: the regions with the most sites (one per layer), in site
// order. For each decode bucket, each such region offers its validated generated candidates within
// kAlternativeSlack of its best time alone (at most kMaxAlternatives, fastest first); the descent
// starts from the picks made alone and replaces a pick only where the whole layer gets faster. What
// was timed and changed goes to artifact.context_tuning (metadata.json, report.md). A failure leaves
// the picks made alone and is reported, not fatal.
#pragma once

#include <functional>
#include <string>

#include "agentcompile/compiler.h"
#include "analysis/regions.h"
#include "emit/artifact.h"
#include "ir/graph.h"
#include "tune/admission_worker.h"
#include "tune/region_cases.h"
#include "tune/sequence_timing.h"

namespace agentcompile::driver {

constexpr double kAlternativeSlack = 0.15;
constexpr size_t kMaxAlternatives = 4;

// The bindings a region was timed at for a bucket, and which of its timings that is.
using TimingAt = std::function<std::pair<tune::RegionBindings, size_t>(const emit::CompiledRegion& region, const emit::Bucket& bucket,
                                                                       size_t bucket_index)>;

// A chain timed, and whether the result came from the tuning database rather than the GPU.
struct ChainTiming {
  tune::SequenceResult result;
  bool reused = false;
};

// Times the layer's chain: `steps` name artifact regions and their candidates by index (the
// compile's GPU worker holds the region modules, tune/admission_worker.h).
using ChainTimer = std::function<Expected<ChainTiming>(const std::vector<tune::ChainStep>& steps, const std::vector<int>& start,
                                                       const tune::SequenceOptions& options)>;

void tune_layers_in_context(const ir::Module& module, emit::Artifact& artifact, const TimingAt& timing_at, const ChainTimer& time_chain,
                            const ProgressFn& progress);

// Per region of `layer` (one layer's sites, in order): its inputs that a region of the layer writes,
// earlier in `layer` or in `previous_layer` (the same regions one layer before), resolved through
// views at `at`. Inputs no region of the unit writes are not linked, nor KV-cache rows (a kv_append's
// result), which stay with each copy's own cache.
std::vector<std::vector<tune::SequenceLink>> layer_links(const ir::Function& function, const std::vector<const analysis::Region*>& previous_layer,
                                                         const std::vector<const analysis::Region*>& layer, const ir::SymbolBindings& at);

}  // namespace agentcompile::driver
