// The GPU side of a compile's admission, from the first region admitted to the last chain timed.
//
// One GPU worker process serves the whole compile (tune/admission_worker.h). It is forked once the
// table of every region (its extracted module, candidates and cubins) is in memory, and builds a
// region's reference cases (random data and the interpreter's outputs) once, when the region's
// first candidates arrive: every candidate of the region is checked against those same outputs, so
// the reference is shared, never skipped, and stays the independent interpreter's. The tuning
// database (tune/tuning_db.h) supplies what it holds for this region, device, toolkit and compiler
// (not with --retune); what is measured afresh is stored back.
//
// admit.cpp admits the regions through the session, context_tune.cpp times the decode layer's
// chains through the same worker and database, and finish_admission closes it.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/compiler.h"
#include "analysis/summary.h"
#include "ir/graph.h"
#include "tune/admission_steps.h"
#include "tune/admission_worker.h"
#include "tune/sequence_timing.h"
#include "tune/tuning_db.h"

namespace agentcompile::pipeline {

struct Plan;
struct Generated;

// What every measurement of the compile depends on, for the tuning database's keys.
struct AdmissionContext {
  nlohmann::json device;            // name, arch, SMs, L2
  std::string toolkit;              // NVRTC version
  std::string compiler;             // the compiler's version and the kernel templates' hash
  std::filesystem::path tuning_db;  // the database's directory; empty: no database
};

// The tuning database's key of a region's file: its structural signature in `context`.
nlohmann::json region_tuning_context(const AdmissionContext& context, const analysis::RegionSummary& summary);

// The time admission has left when `done` of `total` candidates are done after `elapsed_s`,
// `reused` of them from the tuning database (which cost next to nothing): the pace of the measured
// ones, applied to the rest. Negative while nothing was measured.
double admission_eta_s(size_t done, size_t reused, size_t total, double elapsed_s);

// A chain timed, and whether the result came from the tuning database rather than the GPU.
struct ChainTiming {
  tune::SequenceResult result;
  bool reused = false;
};

class AdmissionSession {
 public:
  // The worker's table, complete before it forks: every region's module, candidates and cubins.
  // `plan` and `generated` must outlive the session and stay unchanged (the table points into them).
  static Expected<std::unique_ptr<AdmissionSession>> open(const ir::Module& module, const Plan& plan, const Generated& generated,
                                                         const CompileOptions& options, AdmissionContext context);
  AdmissionSession(const AdmissionSession&) = delete;
  AdmissionSession& operator=(const AdmissionSession&) = delete;

  const AdmissionContext& context() const { return context_; }
  const tune::RegionWork& work(size_t region) const { return table_[region]; }
  const std::vector<std::string>& fingerprints(size_t region) const { return fingerprints_[region]; }
  tune::AdmissionWorker& worker() { return *worker_; }
  bool has_database() const { return db_.has_value(); }

  // The database's file of a region (a fresh one with --retune; none without a database), its time
  // into `times`.
  std::optional<tune::TuningFile> load(const nlohmann::json& context, tune::AdmissionTimes& times);
  // Writes what `file` added; a failure is a warning. Its time goes into `times`.
  void store(const tune::TuningFile& file, tune::AdmissionTimes& times);

  // The decode layer's chains: the database's file of them is read once, each chain is taken from it
  // when it holds one of that key (not with --retune) or timed in the worker, and the file is written
  // back at the end. Chain timing's cost goes into `times`.
  void open_chains();
  Expected<ChainTiming> time_chain(const std::vector<tune::ChainStep>& steps, const std::vector<int>& start,
                                   const tune::SequenceOptions& options, tune::AdmissionTimes& times);
  void close_chains(tune::AdmissionTimes& times);

  // What admission counted, for metadata.json "tuning".
  size_t reused = 0, measured = 0, regions_reused = 0;
  std::vector<std::string> warnings;

 private:
  explicit AdmissionSession(AdmissionContext context, bool retune) : context_(std::move(context)), retune_(retune) {}

  AdmissionContext context_;
  bool retune_ = false;
  std::vector<ir::Module> modules_;                     // per region: its extracted module
  std::vector<tune::RegionWork> table_;                 // per region: what the worker reads
  std::vector<std::vector<std::string>> fingerprints_;  // per region, per candidate: its tuning database identity
  std::vector<std::string> region_keys_;                // per region: the hash of its database context
  std::optional<tune::TuningDb> db_;
  std::optional<tune::TuningFile> chains_;
  std::unique_ptr<tune::AdmissionWorker> worker_;
};

}  // namespace agentcompile::pipeline
