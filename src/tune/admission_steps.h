// One region's admission inside a GPU worker (admission_worker.h): the region's cases, weights and
// timing buffers on the device, and each candidate validated and timed against them.
//
// What a region needs is set up once and shared by every candidate: the reference cases (random
// data and the interpreter's outputs, computed once per region, input set and seed), the weights on
// the device, and per timing size the random data and the rotating buffer sets larger than L2. Each
// candidate then gets what it always got: outputs poisoned with NaN before every case, every output
// and state compared with the reference, inputs and weights checked unchanged, and CUDA-event
// timing over the rotating sets.
//
// Early stop: after the warm-up and the batch probe a candidate is timed for `screen_samples`
// samples; when the fastest of them is slower than (1 + early_stop_margin) times the best median
// measured so far at that size in the region, it is not timed further (Timing::stopped_early, its
// median over those samples). It cannot be selected: its median is above its fastest sample, which is
// above the best. Candidates that go on are timed exactly as before, warm-up to repetitions.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "agentcompile/status.h"
#include "codegen/nvrtc_compiler.h"
#include "plan/candidate.h"
#include "tune/admission.h"
#include "tune/admission_times.h"
#include "gpu/cuda_driver.h"
#include "tune/device_sets.h"
#include "gpu/library_calls.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {

// One region as a worker sees it. Everything it points to outlives the worker and stays unchanged:
// the worker is a fork and reads it from its own copy of the caller's memory.
struct RegionWork {
  std::string id;                                        // "decode.r3", for messages
  const ir::Module* region_module = nullptr;             // the extracted region (function "region")
  RegionBindings bindings;                               // the validation size
  int seeds = 3;                                         // cases: seeds x distributions
  std::vector<Distribution> distributions = {Distribution::kNormal, Distribution::kHeavyTailed};
  const std::vector<RegionCase>* cases = nullptr;        // prebuilt cases; null: the worker builds them
  const std::vector<plan::Candidate>* candidates = nullptr;
  const std::vector<codegen::CompileResult>* compiled = nullptr;  // per candidate
  AdmitOptions options;
};

// The timing data of one size, uploaded once and read by every candidate of the region.
struct TimingSets {
  std::vector<DeviceSet> sets;
  double best_us = 0;  // the best median at this size so far (0: none yet), the early-stop bar
};

// A region's state in the worker, from its first candidate to the next region.
struct RegionOnDevice {
  std::vector<RegionCase> built;          // the cases, when built here
  const std::vector<RegionCase>* cases = nullptr;
  RegionLayout layout;
  SharedWeights weights;
  gpu::PinnedBuffer staging;                   // read-backs of inputs and weights (device_holds)
  // Read-backs of a candidate's outputs and states, kept from one candidate to the next: at 2^30
  // elements a fresh vector spends longer zeroing and faulting in its pages than the copy takes.
  std::vector<std::vector<uint8_t>> output_bytes, state_bytes;
  std::map<std::tuple<int64_t, int64_t, int32_t>, TimingSets> timing;  // by (T, L, pos)
};

// Builds (or takes) the region's cases, with weights from `cache` when given, and uploads its weights.
Expected<std::unique_ptr<RegionOnDevice>> prepare_region(const RegionWork& work, AdmissionTimes& times, WeightCache* cache = nullptr);

// Validates candidate `index` of the region and, if it passes, times it at every timing size.
// `faulted` in the result means the context may be unusable: the worker must not go on.
CandidateResult admit_candidate(gpu::CudaContext& ctx, gpu::LibraryRunner* library, RegionOnDevice& region, const RegionWork& work,
                                size_t index, AdmissionTimes& times);

// The host half of a case's check: the bytes read back from a candidate's outputs and states against
// the case's reference. Returns why the candidate is rejected, or "" when every value is within
// tolerance; the largest errors seen are raised into `max_abs` and `max_rel`.
std::string check_case_outputs(const RegionLayout& layout, const RegionCase& c, const std::vector<std::vector<uint8_t>>& outputs,
                               const std::vector<std::vector<uint8_t>>& states, double& max_abs, double& max_rel);

// The early-stop rule: whether `samples` (per-launch microseconds) show a candidate clearly behind
// `best_us`, the best median at this size so far (0: none, never behind).
bool clearly_behind(const std::vector<double>& samples, double best_us, double margin);

}  // namespace agentcompile::tune
