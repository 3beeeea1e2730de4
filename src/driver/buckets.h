// Buckets and the sizes regions are checked and timed at (DESIGN.md, "plan" and "measure & select").
//
// Prefill calls are bucketed by their token count T, decode steps by their context (the keys a
// step's attention reads); every bucket has its own selection. A region is validated at one odd size
// per function (tile edges and offsets exercised) and timed either there or, where its time follows
// the bucket, once per bucket at the bucket's representative size.
#pragma once

#include <string>
#include <vector>

#include "analysis/summary.h"
#include "emit/artifact.h"
#include "ir/graph.h"
#include "tune/region_cases.h"

namespace agentcompile::driver {

// The buckets of a function of a model whose longest sequence is `max_tokens`; a captured module's
// function has one, at `run_tokens` (the size its symbol T runs at; 1 when its shapes are static).
std::vector<emit::Bucket> buckets_for(const ir::Function& f, int64_t max_tokens, int64_t run_tokens = 1);

// The size a region of `function` is validated at (`summary` gives its cost at `run_tokens`).
tune::RegionBindings validation_bindings(const std::string& function, const analysis::RegionSummary& summary, int64_t run_tokens);

// Whether a region's time follows the bucket's range (then it is timed once per bucket).
bool timed_per_bucket(const std::string& function, const analysis::RegionSummary& summary);

// Where a candidate is timed for `bucket`.
tune::RegionBindings timing_bindings(const std::string& function, const emit::Bucket& bucket, bool per_bucket);

// The sizes a region is timed at: one per bucket when its time follows the bucket, else one.
std::vector<tune::RegionBindings> timing_sizes(const std::string& function, const analysis::RegionSummary& summary,
                                               const std::vector<emit::Bucket>& buckets);

}  // namespace agentcompile::driver
