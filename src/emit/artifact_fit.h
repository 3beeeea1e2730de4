// Whether an artifact serves a model on a GPU, and where a model's own artifact lives in the cache.
// The runtime loads only an artifact that fits; compile on first use (src/first_use) compiles one
// into the model's cache directory when none does. Nothing runs from an artifact that describes
// another model or another GPU.
#pragma once

#include <filesystem>
#include <string>

#include "agentcompile/compiler.h"
#include "frontend/model_config.h"

namespace agentcompile::emit {

// Why `dir` cannot serve this model (its configuration and IR text, emit/model_module.h) on a GPU of
// `arch`; empty when it can.
std::string artifact_incompatibility(const std::filesystem::path& dir, const frontend::ModelConfig& config, const std::string& ir_text,
                                     const std::string& arch);

// The default artifact directory of a model: <cache>/models/<hash of its path and configuration>,
// with a suffix per compile ablation ("-unfused", "-cublas-matmuls", "-no-tf32"), so each keeps its own artifact.
std::filesystem::path default_artifact_dir(const std::filesystem::path& cache_dir, const std::filesystem::path& model,
                                           const frontend::ModelConfig& config, const CompileOptions& compile = {});

}  // namespace agentcompile::emit
