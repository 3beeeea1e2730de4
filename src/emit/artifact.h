// The compiled artifact, in memory: everything the emitter writes and the runtime reads back.
//
// On disk (DESIGN.md, "emit"): metadata.json (the record of the whole compile), kernels/*.cu (the
// selected kernels with host launchers), include/ (the templates and the launch signatures),
// cubin/*.cubin (for direct loading), CMakeLists.txt (builds the kernels into a library), report.md,
// advice.json (every advisor exchange by request hash, what --advisor replay:FILE reads) and
// ablation.json (the advisor ablation, when asked for).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor/advice.h"
#include "agentcompile/status.h"
#include "analysis/regions.h"
#include "codegen/nvrtc_compiler.h"
#include "emit/artifact_record.h"
#include "emit/artifact_store.h"
#include "plan/planner.h"
#include "plan/sizes.h"
#include "tune/admission.h"
#include "tune/admission_times.h"
#include "tune/search.h"
#include "tune/selection.h"

namespace agentcompile::emit {

struct CompiledRegion {
  std::string id;              // "decode.r3"
  plan::RegionPlan plan;
  std::vector<codegen::CompileResult> compiled;   // per candidate
  std::vector<tune::CandidateResult> results;     // per candidate (admission), empty without a GPU
  std::vector<tune::Selection> selections;        // per bucket of the region's function
  advisor::RegionAdvice advice;                   // what the advisor said and its fate
  tune::SearchRecord search;                      // the measuring order, the budget, what was measured
  tune::AdmissionTimes admission_times;           // what admitting this region cost, stage by stage
};

struct CompiledFunction {
  std::string name;
  analysis::RegionPartition partition;
  std::vector<plan::Bucket> buckets;
  std::vector<int> unique_of_region;  // partition region -> index into regions_ of the artifact
};

// A runtime kernel (artifact_record.h) as this compile built it.
struct RuntimeKernel {
  RuntimeKernelSpec spec;
  codegen::CompileResult compiled;
  std::string cubin_path() const { return std::string("cubin/") + spec.kernel + ".cubin"; }
};

struct StageTimes {
  double analyze_s = 0, plan_s = 0, generate_s = 0, admit_s = 0, emit_s = 0, total_s = 0;
};

struct Artifact {
  std::string key;                 // SHA-256 of what the compile depends on
  nlohmann::json model;            // model_type, dims, dtype, config hash, source path
  nlohmann::json device;           // name, arch, profile or probed, copy bandwidth
  std::string nvrtc_version;
  std::string module_ir;           // the IR text of the compiled module
  std::vector<CompiledFunction> functions;
  std::vector<CompiledRegion> regions;
  std::vector<RuntimeKernel> runtime_kernels;  // the sampler, for a module that generates
  bool gpu_used = false;           // admission and timing ran
  StageTimes times;
  nlohmann::json options;          // the compile options that shaped the result
  nlohmann::json advisor;          // settings and counts (metadata.json "advisor")
  nlohmann::json advice_record;    // advice.json; null without an advisor
  nlohmann::json ablation;         // ablation.json; null unless --ablate-advisor
  std::string ablation_table;      // the ablation as text (report.md and the CLI)
  nlohmann::json context_tuning;   // per decode bucket: the layer timed as a chain (tune/layer_chain.h); null: not run
  tune::AdmissionTimes admission_times;  // admission's stages summed over the regions and the chains
  nlohmann::json tuning;           // the tuning database and early stop: path, reuse counts, warnings (tune/tuning_db.h)
  nlohmann::json weights;          // weight formats, bytes per decode token, quantization error per tensor; null: float weights
  std::map<std::string, std::string> ir_dumps;  // --dump-ir: listings by file name, written into ir/ beside module.ir
};

// Every file of the artifact but metadata.json (emit/artifact_store.h).
Expected<ArtifactFiles> render_artifact_files(const Artifact& artifact);

struct WrittenArtifact {
  ArtifactRecord record;           // metadata.json as written, read back through the one reader
  double emit_seconds = 0;         // rendering the files (recorded in metadata.json)
};

// Writes the artifact into `dir` once: every file into a temporary directory beside it, fsync'd,
// then renamed into place, so `dir` holds the previous artifact or the new one, never a mix. `dir`
// must be missing, empty, or an agentcompile artifact with nothing else in it (emit/output_dir.h);
// anything else is refused and left untouched. Writers of one `dir` take turns (a lock beside it).
// `artifact.times.total_s` is the time up to emit; the emit time is added to it.
Expected<WrittenArtifact> write_artifact(const Artifact& artifact, const std::filesystem::path& dir);

// The metadata.json document without its file list (write_artifact adds it).
nlohmann::json artifact_metadata(const Artifact& artifact);

// report.md: the paper's table and one section per region.
std::string artifact_report(const Artifact& artifact);

}  // namespace agentcompile::emit
