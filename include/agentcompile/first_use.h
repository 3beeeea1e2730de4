// Compile on first use: the layer above the compiler and the runtime, and the only one that links
// both. Before an Engine or a FunctionRunner loads, the artifact the options name (or the model's own
// in the cache) is checked against this model and GPU; when it does not fit, the model is compiled
// into its cache directory (or an up-to-date artifact there is reused), and the runtime loads that.
//
//   agentcompile::EngineOptions options;
//   options.model = "checkpoints/qwen3-1.7b";
//   auto engine = agentcompile::load_engine(options, progress);
//
// A process that only runs compiled models calls Engine::load / FunctionRunner::load (engine.h,
// function.h) and links the runtime alone, without NVRTC, the advisor or libcurl. These calls must
// come before CUDA is initialized in the process: compiling forks admission workers.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "agentcompile/engine.h"
#include "agentcompile/function.h"
#include "agentcompile/status.h"

namespace agentcompile {

struct PreparedArtifact {
  std::filesystem::path dir;
  bool compiled_now = false;  // this call compiled (or recompiled) it
  std::string note;           // why a compile ran, or which artifact is used
};

// The artifact `options` will run from, compiled first when none fits (see above).
Expected<PreparedArtifact> prepare_artifact(const EngineOptions& options, const ProgressFn& progress = {});

// prepare_artifact, then Engine::load / FunctionRunner::load on the artifact it gives.
Expected<std::unique_ptr<Engine>> load_engine(const EngineOptions& options, const ProgressFn& progress = {});
Expected<std::unique_ptr<FunctionRunner>> load_function_runner(const EngineOptions& options, const std::string& function,
                                                               const ProgressFn& progress = {}, const FunctionRunnerOptions& runner = {});

}  // namespace agentcompile
