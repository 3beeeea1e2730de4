// The compile pipeline's stages (DESIGN.md, "compile"), in the order compile_model (compile.cpp) runs
// them. Each stage is one function in a file of its own: it takes what earlier stages produced, as
// narrowly as it can, and returns its own output. The policies a stage applies live in its library
// (the sizes in plan/sizes.h, selection in tune/selection.h, the search budget in tune/search.h, the
// artifact's key and cache in emit/); these files only put the stages in order and report progress.
//
//   options -capture-> CapturedModel -analyze-> Analysis -plan-> Plan -advise-> Advice
//     -generate-> Generated -admit-> Admitted -select-> Selected -context-tune-> ChainPicks -emit-> artifact
//
// The target (the GPU here or a named profile) is chosen beside capture, and the artifact's identity
// right after: an up-to-date artifact of that key (emit's cache) ends the compile there.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor/advisor.h"
#include "agentcompile/compiler.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "emit/artifact.h"
#include "emit/model_module.h"
#include "frontend/model_source.h"
#include "plan/device_profile.h"
#include "plan/planner.h"
#include "plan/sizes.h"
#include "tune/ablation.h"
#include "tune/search.h"
#include "tune/selection.h"

namespace agentcompile::pipeline {

// --- capture (capture.cpp) ---
// The model opened (shapes only, no weights) and its IR module, raised by recognition for a capture.
struct CapturedModel {
  frontend::ModelSource source;
  emit::ModelModule module;  // the module compiled, its IR text (the artifact's module.ir), the recognizer's lines
};
Expected<CapturedModel> capture_model(const CompileOptions& options, const ProgressFn& say);

// --- target (target.cpp) ---
// What the compile plans for: the GPU here (admission and timing run) or a named profile (compile only).
struct Target {
  plan::DeviceProfile profile;
  bool gpu = false;
  nlohmann::json device;  // metadata.json "device"
};
Expected<Target> choose_target(const CompileOptions& options, const ProgressFn& say);

// --- identity (identity.cpp) and warm reuse (emit.cpp; the key and the cache are emit's) ---
struct ArtifactIdentity {
  std::string key;
  std::string nvrtc_version;
  std::string compiler;         // the compiler's version and the kernel templates' hash (the tuning database's keys)
  nlohmann::json options;       // the options that shape the result (metadata.json "options")
  nlohmann::json model;         // metadata.json "model"
  std::vector<emit::RuntimeKernelSpec> runtime_kernels;
};
ArtifactIdentity identify_artifact(const CapturedModel& model, const Target& target, const CompileOptions& options);
// The summary of an up-to-date artifact in the output directory or the cache; none: compile.
Expected<std::optional<CompileSummary>> reuse_warm_artifact(const ArtifactIdentity& identity, const CompileOptions& options,
                                                            const std::filesystem::path& cache_dir, const ProgressFn& say);

// --- analyze (analyze.cpp) ---
struct AnalyzedFunction {
  const ir::Function* function = nullptr;
  analysis::RegionPartition partition;
  std::vector<analysis::UniqueRegion> unique;  // summaries at plan::summary_bindings
  int64_t run_tokens = 1;                      // the size a captured module's function runs at
};
struct Analysis {
  std::vector<AnalyzedFunction> functions;  // every function but "init" (weights only, run at load)
  size_t nodes = 0, regions = 0, unique = 0;
  double seconds = 0;
};
Analysis analyze_regions(const CapturedModel& model, const CompileOptions& options, const ProgressFn& say);

// --- plan (plan.cpp) ---
struct PlannedRegion {
  std::string id;           // "decode.r3"
  plan::RegionPlan plan;    // the bounded, ranked candidate space
  plan::RegionSizes sizes;  // where its candidates are validated and timed
};
// Whether admission validates and times the region's candidates: not when it has none, nor for a
// collective (tensor parallelism's NCCL call needs every rank; it is checked end to end instead).
inline bool admits(const PlannedRegion& region) {
  return !region.plan.candidates.empty() && region.plan.summary.category != analysis::Category::kCollective;
}
struct Plan {
  std::vector<emit::CompiledFunction> functions;  // partition, buckets, site -> region
  std::vector<PlannedRegion> regions;             // every unique region of every function
  size_t candidates = 0;
  double seconds = 0;
};
Plan plan_candidates(const CapturedModel& model, const Analysis& analysis, const Target& target, const CompileOptions& options,
                     const ProgressFn& say);

// --- advise (advise.cpp) ---
struct AdvisedRegion {
  advisor::RegionAdvice advice;  // what the advisor said and its fate
  tune::SearchRecord search;     // the measuring order (advised or heuristic) and the budget
};
struct Advice {
  std::vector<AdvisedRegion> regions;  // per planned region
};
Advice advise_order(const Plan& plan, advisor::Advisor& advisor, const CompileOptions& options, const ProgressFn& say);
// The advisor's settings and counts (metadata.json "advisor", with the summary line as "line").
nlohmann::json advice_totals(const Advice& advice, const advisor::Advisor& advisor);

// --- generate (generate.cpp) ---
struct Generated {
  std::vector<std::vector<codegen::CompileResult>> compiled;  // per planned region, per candidate (library ones: empty)
  std::vector<emit::RuntimeKernel> runtime_kernels;
  size_t sources = 0;
  double seconds = 0;
};
Expected<Generated> generate_kernels(const Plan& plan, const std::vector<emit::RuntimeKernelSpec>& runtime_kernels, const Target& target,
                                     const std::filesystem::path& cache_dir, const ProgressFn& say);
// Diagnostic hints for the candidates NVRTC could not compile: recorded in the advice, never used as code.
void diagnose_failures(const Plan& plan, const Generated& generated, advisor::Advisor& advisor, Advice& advice);

// --- admit (admit.cpp; the GPU worker and the tuning database in admission_session.h) ---
class AdmissionSession;
struct Admitted {
  std::vector<tune::AdmittedRegion> regions;  // per planned region: results, search, what it cost
  tune::AdmissionTimes times;                 // summed over the regions (and the chains, once timed)
  std::vector<tune::RegionMeasurement> measurements;  // --ablate-advisor: every region measured in full
  double seconds = 0;
  // The worker and the database, kept for the chain timing; null without a GPU. finish_admission closes it.
  std::shared_ptr<AdmissionSession> session;
};
// With a GPU: validates and times each region's candidates in its measuring order under its budget.
// Without: records that nothing was measured.
Expected<Admitted> admit_regions(const CapturedModel& model, const Plan& plan, const Advice& advice, const Generated& generated,
                                 const Target& target, const ArtifactIdentity& identity, const CompileOptions& options,
                                 const std::filesystem::path& cache_dir, const ProgressFn& say, const AdmissionProgressFn& admission_progress);
// After the chain timing (which uses the worker): the worker stops, the tuning database's warnings
// are said, and the record of the database's use (metadata.json "tuning") is returned.
nlohmann::json finish_admission(Admitted& admitted, const CompileOptions& options, const ProgressFn& say);
// --ablate-advisor: every ordering replayed on the one exhaustive measurement (ablation.json).
tune::AblationRecord ablate_orderings(const Plan& plan, const Admitted& admitted, const ArtifactIdentity& identity,
                                      const CompileOptions& options, const Target& target);

// --- select (select.cpp) ---
struct Selected {
  std::vector<std::vector<tune::Selection>> regions;  // per planned region, per bucket of its function
  std::vector<std::vector<tune::SearchRecord::BucketOutcome>> outcomes;  // rank and regret of the picks made alone
};
Selected select_kernels(const Plan& plan, const Generated& generated, const Admitted& admitted, const Target& target);

// --- context-tune (context_tune.cpp) ---
// The decode layer's picks made again in the chain of its kernels (tune/layer_chain.h), through the
// admission's worker and database (their cost goes into admitted.times).
struct ChainPicks {
  Selected selected;      // the picks, some replaced by the chain's
  nlohmann::json record;  // per decode bucket: what was timed and changed (metadata.json "context_tuning"); null: not run
  std::string not_run;    // why nothing was timed ("" when the chain ran)
  double seconds = 0;
};
ChainPicks tune_layer_chain(const CapturedModel& model, const Plan& plan, Admitted& admitted, Selected selected,
                            const CompileOptions& options, const ProgressFn& say);

// --- emit (emit.cpp; the format, the writer, the key and the cache are emit's) ---
// What the compile recorded beside the stages' outputs.
// --- weights (weights.cpp) ---
// metadata.json "weights": the formats, the weight bytes a decode step reads, and with --quantize the
// error of every quantized matrix (the checkpoint read and quantized here); null where the module
// keeps the checkpoint's float weights.
Expected<nlohmann::json> weights_record(const CapturedModel& model, const CompileOptions& options, const ProgressFn& say);

struct CompileRecords {
  nlohmann::json advisor;          // metadata.json "advisor": settings, counts and the summary line
  nlohmann::json advice_record;    // advice.json; null without an advisor
  tune::AblationRecord ablation;   // --ablate-advisor (ablation.json); null otherwise
  nlohmann::json tuning;           // metadata.json "tuning"; null without a GPU
  nlohmann::json weights;          // metadata.json "weights" (weights_record); null for float weights
  std::map<std::string, std::string> listings;  // --dump-ir: ir/<name>
  double seconds = 0;              // the compile so far
};
// Every stage's output, read by the emitter.
struct StageOutputs {
  const CapturedModel& model;
  const Target& target;
  const ArtifactIdentity& identity;
  const Analysis& analysis;
  const Plan& plan;
  const Advice& advice;
  const Generated& generated;
  const Admitted& admitted;
  const ChainPicks& picks;
  const CompileRecords& records;
};
// The artifact's record of the whole compile (emit/artifact.h).
emit::Artifact assemble_artifact(const StageOutputs& outputs);
// Writes the artifact once into options.output, stores a copy in the cache, and summarizes it.
Expected<CompileSummary> emit_artifact(const emit::Artifact& artifact, const Analysis& analysis, const CompileOptions& options,
                                       const std::filesystem::path& cache_dir, const ProgressFn& say);

// --- --dump-ir (dump_ir.cpp) ---
// The listings written into the artifact's ir/ folder after each stage (plain text, deterministic:
// only the admission listing holds measured values). Empty unless options.dump_ir.
class IrListings {
 public:
  explicit IrListings(bool enabled) : enabled_(enabled) {}
  void captured(const CapturedModel& model);                      // captured.ir, when recognition changed the module
  void analyzed(const Analysis& analysis);                        // <function>.regions.txt
  void planned(const Plan& plan);                                 // <function>.candidates.txt
  void advised(const Plan& plan, const Advice& advice);           // <function>.advised.txt
  void generated(const Plan& plan, const Generated& generated);   // <function>.generated.txt
  void admitted(const Plan& plan, const Admitted& admitted);      // <function>.admitted.txt
  void selected(const Plan& plan, const Selected& selected);      // <function>.selected.txt
  void chain(const Plan& plan, const ChainPicks& picks);          // <function>.context-tuned.txt
  std::map<std::string, std::string> take() { return std::move(files_); }

 private:
  bool enabled_;
  std::map<std::string, std::string> files_;
};

}  // namespace agentcompile::pipeline
