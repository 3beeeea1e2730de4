// Which artifact a model runs from, compiled on first use. A user-named artifact is used when it fits
// (emit/artifact_fit.h: this model's configuration and IR, this GPU architecture, validated and timed,
// carrying the runtime's kernels); otherwise the reason is reported and the model's own artifact in
// the cache is compiled (or warmly reused). Nothing runs from an artifact that describes another model
// or another GPU.
//
// This runs before CUDA is initialized in the process: compiling forks admission workers.
#pragma once

#include <string>

#include "agentcompile/engine.h"
#include "agentcompile/first_use.h"
#include "frontend/model_config.h"

namespace agentcompile::first_use {

Expected<PreparedArtifact> resolve_artifact(const EngineOptions& options, const frontend::ModelConfig& config, const std::string& ir_text,
                                            const ProgressFn& progress);

}  // namespace agentcompile::first_use
