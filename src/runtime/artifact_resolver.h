// Which artifact a model runs from. A user-named artifact is used when it was compiled for this
// model's configuration and IR, on this GPU architecture, with validation and timing; otherwise the
// engine says why and compiles (or warmly reuses) the model's own artifact in the cache. Nothing
// runs from an artifact that describes another model or another GPU.
//
// This runs before CUDA is initialized in the process: compiling forks admission workers.
#pragma once

#include <filesystem>
#include <string>

#include "agentcompile/compiler.h"
#include "agentcompile/engine.h"
#include "frontend/model_source.h"

namespace agentcompile::runtime {

struct ResolvedArtifact {
  std::filesystem::path dir;
  bool compiled_now = false;
  std::string note;  // why a compile ran, or which artifact was reused
};

// Why `dir` cannot serve this model on a GPU of `arch` (empty when it can).
std::string artifact_incompatibility(const std::filesystem::path& dir, const frontend::ModelConfig& config, const std::string& ir_text,
                                     const std::string& arch);

// The default artifact directory of a model: <cache>/models/<hash of its path and configuration>,
// with a suffix per compile ablation ("-unfused", "-cublas-matmuls"), so each keeps its own artifact.
std::filesystem::path default_artifact_dir(const std::filesystem::path& cache_dir, const std::filesystem::path& model,
                                           const frontend::ModelConfig& config, const CompileOptions& compile = {});

Expected<ResolvedArtifact> resolve_artifact(const EngineOptions& options, const frontend::ModelConfig& config, const std::string& ir_text,
                                            const ProgressFn& progress);

}  // namespace agentcompile::runtime
