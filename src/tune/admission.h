// Admission and measurement of a region's candidates on the GPU.
//
// Each candidate, in the order given: its cubin is loaded; for every case (seeds x distributions)
// the inputs, weights and states are uploaded, outputs are poisoned with NaN, the launches run, and
// outputs and states are compared with the reference while inputs and weights must come back
// unchanged; a candidate that passes every case is timed with CUDA events over rotating buffer sets
// larger than L2 (median and spread; short kernels are timed in batches of back-to-back launches). All GPU work happens in a forked worker process: a kernel that
// faults (illegal address, a trap, a hang past the timeout) is recorded as a fault for that
// candidate, the worker is replaced, and admission continues with the next candidate.
#pragma once

#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "codegen/nvrtc_compiler.h"
#include "plan/candidate.h"
#include "tune/cuda_driver.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {

struct AdmitOptions {
  int warmup = 5;
  int repetitions = 30;
  double candidate_timeout_s = 60;
  bool measure = true;
  // Sizes to time a validated candidate at (e.g. one per prefill bucket of T), with random data;
  // empty: time at the validation bindings.
  std::vector<RegionBindings> timing;
};

struct Timing {
  RegionBindings bindings;
  double median_us = 0, p10_us = 0, p90_us = 0;  // per launch of the candidate
  int repetitions = 0;          // samples
  int launches_per_sample = 1;  // back-to-back launches timed together in one sample
  int buffer_sets = 0;          // input sets rotated so each launch reads data that left L2
};

struct CandidateResult {
  std::string id;
  std::string name;
  bool compiled = false;
  bool validated = false;
  bool measured = false;
  bool faulted = false;
  std::string rejection;  // empty when validated: compile error, wrong numbers, NaN, fault, input modified
  double max_abs_error = 0;
  double max_rel_error = 0;
  int cases = 0;
  std::vector<Timing> timings;  // one per AdmitOptions::timing entry (or the validation bindings)
  // The first timing, for callers that time at one size.
  double median_us = 0, p10_us = 0, p90_us = 0;
};

// `compiled` holds the NVRTC result of each candidate (same order); library candidates have none.
Expected<std::vector<CandidateResult>> admit_candidates(const ir::Module& region_module, const RegionBindings& bindings,
                                                         const std::vector<RegionCase>& cases,
                                                         const std::vector<plan::Candidate>& candidates,
                                                         const std::vector<codegen::CompileResult>& compiled,
                                                         const AdmitOptions& options);

// CUDA must not be initialized in a process that later forks admission workers, so the compiler
// process touches the GPU only through these, which run in a forked child of their own.
Expected<DeviceInfo> probe_device();
// Device-to-device copy bandwidth, bytes read + written per second (GB/s), measured now.
Expected<double> measure_copy_bandwidth_gbs(size_t bytes = size_t{1} << 30);
// NVRTC target for a device: sm_90a for compute capability 9.0, otherwise sm_XY.
std::string nvrtc_arch(const DeviceInfo& info);

}  // namespace agentcompile::tune
