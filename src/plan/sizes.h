// The sizes a compile works at, in one place: the buckets a function's calls are tuned for, the sizes
// a region's cost summary is computed at, the size its candidates are checked at, and the sizes they
// are timed at (DESIGN.md, "plan" and "measure & select"). Every number is a named constant in
// sizes.cpp with the reason it is what it is.
//
// Prefill calls are bucketed by their token count T, decode steps by their context (the keys a
// step's attention reads); every bucket has its own selection. A region is validated at one odd size
// per function (tile edges and offsets exercised) and timed either there or, where its time follows
// the bucket, once per bucket at the bucket's representative size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/summary.h"
#include "ir/graph.h"
#include "ir/shape.h"

namespace agentcompile::plan {

// Where a region runs: the call's tokens, the cache rows allocated and the call's first position.
struct RegionBindings {
  int64_t T = 1;    // tokens of the call
  int64_t L = 256;  // cache rows allocated
  int32_t pos = 0;  // first position of the call
};

// A range of calls that shares one selection. Prefill buckets are ranges of the token count T;
// decode (T = 1) buckets are ranges of the context, the keys a step's attention reads, since that
// is what a decode attention kernel's time follows (the runtime captures one decode graph per
// bucket). A context range of 0..0 means any context.
struct Bucket {
  std::string name;     // "decode", "decode-c4097-16384", "t1-64", "t65-512", ...
  int64_t min_tokens = 1;
  int64_t max_tokens = 1;
  int64_t timing_tokens = 1;  // the T candidates are timed at for this bucket
  int64_t min_context = 0;    // keys read by the call's attention: [min_context, max_context]
  int64_t max_context = 0;
  int64_t timing_context = 0; // the context candidates whose time follows it are timed at
  bool bounds_context() const { return max_context > 0; }
};

// The buckets of a function of a model whose longest sequence is `max_tokens`; a captured module's
// function has one, at `run_tokens` (the size its symbol T runs at; 1 when its shapes are static).
std::vector<Bucket> buckets_for(const ir::Function& f, int64_t max_tokens, int64_t run_tokens = 1);

// The sizes a region's cost summary (FLOPs, bytes: metadata.json, report.md, the advisor's request,
// the validation budget below) is computed at. They never decide which regions are the same
// (signatures are symbolic) and never pick a kernel.
ir::SymbolBindings summary_bindings(const std::string& function, int64_t run_tokens);

// The size a region of `function` is validated at (`summary` gives its cost at `run_tokens`).
RegionBindings validation_bindings(const std::string& function, const analysis::RegionSummary& summary, int64_t run_tokens);

// Whether a region's time follows the bucket's range (then it is timed once per bucket).
bool timed_per_bucket(const std::string& function, const analysis::RegionSummary& summary);

// Where a candidate is timed for `bucket`.
RegionBindings timing_bindings(const std::string& function, const Bucket& bucket, bool per_bucket);

// The sizes a region is timed at: one per bucket when its time follows the bucket, else one.
std::vector<RegionBindings> timing_sizes(const std::string& function, const analysis::RegionSummary& summary,
                                         const std::vector<Bucket>& buckets);

// Every size of one unique region, as admission and the chain timing use them.
struct RegionSizes {
  RegionBindings validation;
  std::vector<RegionBindings> timing;  // timing_sizes(): one per bucket when per_bucket, else one
  bool per_bucket = false;
  // Which of the region's timings bucket `bucket` reads.
  size_t timing_index(size_t bucket) const { return per_bucket ? bucket : 0; }
};

// `buckets` are the function's; `run_tokens` is buckets.front().max_tokens (its largest call).
RegionSizes region_sizes(const std::string& function, const analysis::RegionSummary& summary, const std::vector<Bucket>& buckets);

}  // namespace agentcompile::plan
