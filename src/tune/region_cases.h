// Test cases for admitting a region's candidates: random inputs, weights and cache contents for
// several seeds and input distributions, with the outputs the reference interpreter computes from
// them on the extracted region module (analysis/extract.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "plan/sizes.h"
#include "tune/admission_times.h"
#include "tune/host_data.h"
#include "tune/weight_cache.h"

namespace agentcompile::tune {

// Where a region runs (T, cache rows, first position); the sizes themselves are plan's (plan/sizes.h).
using RegionBindings = plan::RegionBindings;

// A region's weights, one per weight slot; a tensor may be shared with other regions (weight_cache.h).
using RegionWeights = std::vector<std::shared_ptr<const TestTensor>>;

struct RegionCase {
  std::string label;                       // "seed 2, heavy-tailed"
  int seed = 0;                            // what random_case drew it from
  Distribution distribution = Distribution::kNormal;
  std::vector<TestTensor> inputs;          // per region input slot
  RegionWeights params;                    // per weight slot, shared by every case
  std::vector<TestTensor> states;          // per state slot, contents before the call
  std::vector<TestTensor> expected_outputs;  // per output slot (empty tensors for state aliases)
  std::vector<TestTensor> expected_states;   // per state slot, contents after the call
};

struct RegionLayout {
  std::vector<ir::TensorType> inputs, params, states, outputs;
  std::vector<int> output_state;  // per output: the state slot it aliases (kv_append result) or -1
  ir::SymbolBindings symbols;
  // The coarsest float dtype of a value the region computes and keeps inside (a norm prologue's f16
  // row, an f16 linear result before a cast to f32): outputs are held to that dtype's tolerance at
  // least, since a kernel may round there as the unfused kernels do and the reference never rounds.
  ir::DType precision = ir::DType::kF32;
};

// The slot layout of an extracted region module (function "region").
Expected<RegionLayout> region_layout(const ir::Module& region_module, const RegionBindings& bindings);

// Random weights for a region (drawn once, shared by cases; through `cache` when given, which
// changes no value) and one case of random inputs and states without a reference (for timing at
// sizes the CPU reference would take too long for).
RegionWeights random_weights(const ir::Module& region_module, const RegionLayout& layout, WeightCache* cache = nullptr);
// With `period` > 0 (timing data), an input or state of more elements is drawn as its first `period`
// elements only, marked periodic (host_data.h): the upload repeats them. A KernelBench input of 2^31
// elements is then 16M values drawn instead of 2^31, which took longer than timing every candidate.
RegionCase random_case(const ir::Module& region_module, const RegionLayout& layout, const RegionBindings& bindings,
                       RegionWeights weights, int seed, Distribution distribution, int64_t period = 0);

// Elements of one period of timing data (random_case): 64 MiB of f32, more than any GPU's L2, so a
// kernel streaming the tensor still reads it from memory.
inline constexpr int64_t kTimingPeriodElements = int64_t{1} << 24;

// How many of a region's seeds x distributions cases admission runs: all of them, unless one case's
// data (inputs, outputs and states at `bindings`) is so large that they would not fit kCaseBudgetBytes
// together; then as many as fit, at least one. The first cases are seed 1 in each distribution.
inline constexpr int64_t kCaseBudgetBytes = int64_t{4} << 30;
int case_count(const RegionLayout& layout, int seeds, size_t distributions);

// Cases for seeds 1..`seeds` x `distributions`, with the reference's outputs and states; the time
// spent drawing data and running the reference is added to `times` when given. Weights come from
// `cache` when given.
Expected<std::vector<RegionCase>> build_region_cases(const ir::Module& region_module, const RegionBindings& bindings,
                                                     int seeds, const std::vector<Distribution>& distributions,
                                                     AdmissionTimes* times = nullptr, WeightCache* cache = nullptr);

}  // namespace agentcompile::tune
