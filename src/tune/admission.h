// Admission and measurement of a region's candidates on the GPU.
//
// Each candidate, in the order given: its cubin is loaded; for every case (seeds x distributions)
// the inputs, weights and states are uploaded, outputs are poisoned with NaN, the launches run, and
// outputs and states are compared with the reference while inputs and weights must come back
// unchanged; a candidate that passes every case is timed with CUDA events over rotating buffer sets
// larger than L2 (median and spread; short kernels are timed in batches of back-to-back launches),
// and stops early when it is clearly behind the best (admission_steps.h). All GPU work happens in a
// forked worker process (admission_worker.h): a kernel that faults (illegal address, a trap, a hang
// past the timeout) is recorded as a fault for that candidate, the worker is replaced, and admission
// continues with the next candidate.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "codegen/nvrtc_compiler.h"
#include "plan/candidate.h"
#include "gpu/cuda_driver.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {

// The rules admission validates and measures by, as the tuning database (tuning_db.h) keys them:
// bump it whenever the validation data, tolerances, checks or the timing protocol change, so that no
// result obtained under other rules is reused.
inline constexpr int kAdmissionVersion = 2;  // 2: weights drawn by key, ziggurat normals, chunk streams apart

// A candidate whose fastest screening sample is more than this fraction slower than the best median
// at that size stops early. Above the decode layer's alternative slack (tune/layer_chain.h), so a
// candidate that stops early could never have been an alternative there either.
inline constexpr double kEarlyStopMargin = 0.25;

struct AdmitOptions {
  int warmup = 5;
  int repetitions = 30;
  double candidate_timeout_s = 60;
  double setup_timeout_s = 600;  // a worker's start and a region's cases (the reference runs in the worker)
  bool measure = true;
  // Sizes to time a validated candidate at (e.g. one per prefill bucket of T), with random data;
  // empty: time at the validation bindings.
  std::vector<RegionBindings> timing;
  double early_stop_margin = kEarlyStopMargin;  // 0: every validated candidate is timed in full
  int screen_samples = 5;                       // samples the early-stop decision looks at
};

struct Timing {
  RegionBindings bindings;
  double median_us = 0, p10_us = 0, p90_us = 0;  // per launch of the candidate
  int repetitions = 0;          // samples
  int launches_per_sample = 1;  // back-to-back launches timed together in one sample
  int buffer_sets = 0;          // input sets rotated so each launch reads data that left L2
  bool stopped_early = false;   // clearly behind the best after the screening samples (`repetitions` of them)
  double fastest_us = 0;        // the fastest sample
  double stop_bar_us = 0;       // when stopped early: the best median at this size it was measured against
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
  bool reused = false;  // validation and timings came from the tuning database (tune/tuning_db.h)
};

// `compiled` holds the NVRTC result of each candidate (same order); library candidates have none.
Expected<std::vector<CandidateResult>> admit_candidates(const ir::Module& region_module, const RegionBindings& bindings,
                                                         const std::vector<RegionCase>& cases,
                                                         const std::vector<plan::Candidate>& candidates,
                                                         const std::vector<codegen::CompileResult>& compiled,
                                                         const AdmitOptions& options);

// The JSON of a result (worker to caller), and back; and of one timing (the tuning database too).
// Parsing is lenient: a missing field keeps its default, a value of the wrong type is an error.
nlohmann::json candidate_result_json(const CandidateResult& result);
Expected<CandidateResult> candidate_result_from_json(const nlohmann::json& j);
nlohmann::json timing_json(const Timing& timing);
Expected<Timing> timing_from_json(const nlohmann::json& j);

}  // namespace agentcompile::tune
