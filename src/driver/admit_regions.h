// Admission, measurement and selection of a compile's regions on the GPU (DESIGN.md, "admit" and
// "measure & select"), with the tuning database, the time of every stage and a progress count.
//
// One GPU worker process serves the whole compile (tune/admission_worker.h). It is forked once the
// table of every region (its extracted module, candidates and cubins) is in memory, and builds a
// region's reference cases (random data and the interpreter's outputs) once, when the region's
// first candidates arrive: every candidate of the region is checked against those same outputs, so
// the reference is shared, never skipped, and stays the independent interpreter's.
//
// Regions go in artifact order. The search budget (driver/search.h) decides which candidates to
// admit; of those, the tuning database (tune/tuning_db.h) supplies each candidate whose validation
// and timings at every size it holds (not with --retune), and the worker admits the rest, whose
// results are stored back. A stored timing that stopped early stands only while it is still
// clearly behind the best of this compile (tune::stored_timing_stands); otherwise that candidate is
// measured again. Each bucket then selects the fastest validated candidate, and the decode layer is
// timed as a chain (driver/context_tuning.h) through the same worker and database.
//
// With the advisor ablation every candidate is timed in full (no early stop): the ablation replays
// other orderings on those measurements.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/compiler.h"
#include "analysis/summary.h"
#include "driver/search.h"
#include "emit/artifact.h"
#include "ir/graph.h"

namespace agentcompile::driver {

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

// Admits and selects every region of `artifact` (results, selections, search records, stage times)
// and fills artifact.admission_times, artifact.tuning and artifact.context_tuning. Returns the
// measurements of the advisor ablation (empty unless options.search.ablate_advisor).
Expected<std::vector<search::RegionMeasurement>> admit_regions(const ir::Module& module, emit::Artifact& artifact,
                                                               const CompileOptions& options, const AdmissionContext& context,
                                                               const ProgressFn& progress, const AdmissionProgressFn& admission_progress);

}  // namespace agentcompile::driver
