// The tuning database: admission's results kept in the cache directory, so that a compile whose
// regions were measured before reuses their validation and timings instead of measuring them again
// (as TensorRT's timing cache does for its tactics).
//
// Keys. One file per region context: everything a region's measurements depend on apart from the
// candidate and the sizes: the region's structural signature (analysis/summary.h: ops, attributes,
// wiring and types, never parameter or layer names, so every model and layer with that region
// shares the file), the device (name, arch, SMs, L2), the toolkit (NVRTC version), the compiler
// version, the kernel templates and the admission rules (kAdmissionVersion). The caller builds that context; the file is named by its
// SHA-256 and repeats it, so a foreign or colliding file is noticed. Inside, entries by the SHA-256
// of their own key, which is kept beside the value:
//   validation  the candidate's fingerprint, the validation size, seeds and input distributions;
//   timing      the candidate's fingerprint, one timing size (one bucket's), warm-up, repetitions
//               and screening samples;
//   anything else the caller puts (the decode layer's chain results, pipeline/admission_session.cpp).
// A candidate's fingerprint is its NVRTC compile key (SHA-256 of its source, the kernel headers, the
// arch and NVRTC version) and every field of the record that shapes its launches, so a kernel that
// changes in any way is a new entry, never a stale hit.
//
// Robustness. A store merges into the file as it is then (another compile may have added to it),
// under a lock beside the database, and replaces it atomically (temporary + rename): a reader sees
// the old file or the new one. Reading never fails a compile: a file or an entry that does not
// parse, has the wrong shape or the wrong key is left out with a warning, and the next store writes
// the file afresh without it.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "codegen/nvrtc_compiler.h"
#include "plan/candidate.h"
#include "tune/admission.h"
#include "tune/host_data.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {

inline constexpr const char* kTuningDbFormat = "agentcompile-tuning/1";

// SHA-256 of the candidate's compile key and launch-shaping fields (see above).
std::string candidate_fingerprint(const plan::Candidate& candidate, const codegen::CompileResult& compiled);

// What a region's admission depends on besides the candidate and the timing size.
struct RegionTuningKey {
  nlohmann::json context;  // the file's key: signature, device, toolkit, compiler (built by the caller)
  RegionBindings validation;
  int seeds = 3;
  std::vector<Distribution> distributions;
  int warmup = 5, repetitions = 30, screen_samples = 5;
};

// One file of the database: what was read, and what this compile adds to it.
class TuningFile {
 public:
  explicit TuningFile(nlohmann::json context = nlohmann::json::object()) : context_(std::move(context)) {}

  const nlohmann::json& context() const { return context_; }
  // The value stored under `key`, if any.
  std::optional<nlohmann::json> get(const nlohmann::json& key) const;
  // Sets the value under `key`, here and (at the next store) in the file.
  void put(const nlohmann::json& key, nlohmann::json value);
  size_t size() const { return entries_.size(); }
  bool changed() const { return !added_.empty(); }

 private:
  friend class TuningDb;
  nlohmann::json context_;
  std::map<std::string, nlohmann::json> entries_;  // entry hash -> {"key": ..., "value": ...}
  std::map<std::string, nlohmann::json> added_;    // the same, for what this compile put
};

class TuningDb {
 public:
  explicit TuningDb(std::filesystem::path dir) : dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path path_of(const nlohmann::json& context) const;

  // The file of `context` (empty when there is none). What cannot be used is left out and said in
  // `warnings`, one line each, naming the file.
  TuningFile load(const nlohmann::json& context, std::vector<std::string>& warnings) const;

  // Writes what `file` added, merged into the file as it is now; nothing when it added nothing.
  Status store(const TuningFile& file) const;

 private:
  std::filesystem::path dir_;
};

// A candidate's stored result: its validation and, when it validated, a timing at every one of
// `sizes` (in that order); nullopt when any of it is missing. The result is marked `reused`.
std::optional<CandidateResult> find_result(const TuningFile& file, const RegionTuningKey& key, const plan::Candidate& candidate,
                                           const std::string& fingerprint, const std::vector<RegionBindings>& sizes);

// Puts a fresh result: its validation and timings. Faults are not kept (a hang or a fault under
// load may not recur), nor compile errors (the NVRTC cache keeps those), nor reused results.
void put_result(TuningFile& file, const RegionTuningKey& key, const std::string& fingerprint, const CandidateResult& result);

// Whether a stored timing that stopped early (admission_steps.h) can stand in this compile: only
// while its fastest sample is still clearly behind `best_us`, the best full median at that size
// among this compile's results. A timing that ran in full always stands.
bool stored_timing_stands(const Timing& timing, double best_us, double margin);

// What the database gives one batch of a region's admission: per candidate of `indices`, its stored
// result (find_result) when every stored timing that stopped early stands against the best full
// median at its size among `earlier` (this compile's results for the region so far) and the batch's
// stored results; nullopt where the candidate must be measured. With `retune`, nothing.
std::vector<std::optional<CandidateResult>> stored_results(const TuningFile& file, const RegionTuningKey& key,
                                                           const std::vector<plan::Candidate>& candidates,
                                                           const std::vector<std::string>& fingerprints, const std::vector<int>& indices,
                                                           const std::vector<RegionBindings>& sizes,
                                                           const std::vector<CandidateResult>& earlier, double margin, bool retune);

}  // namespace agentcompile::tune
