// Compile on first use, then load (include/agentcompile/first_use.h).
#include "agentcompile/first_use.h"

#include "emit/model_module.h"
#include "first_use/artifact_resolver.h"
#include "frontend/model_source.h"

namespace agentcompile {

namespace {

// The model as the runtime will open it (weights mapped, headers only) and its module, whose IR text
// the artifact must match.
struct OpenedModel {
  frontend::ModelSource source;
  emit::ModelModule module;
};

Expected<OpenedModel> open_for_runtime(const EngineOptions& options) {
  OpenedModel opened;
  AC_ASSIGN_OR_RETURN(const frontend::WeightFormatOptions formats,
                      frontend::weight_format_options(options.compile.quantize, options.compile.dequantize, /*gpu=*/true,
                                                                      options.compile.quantize_head));
  AC_ASSIGN_OR_RETURN(opened.source, frontend::open_model(options.model, /*with_weights=*/true, formats));
  AC_ASSIGN_OR_RETURN(opened.module, emit::model_module(opened.source, options.compile.batch_decode,
                                                       {options.compile.tensor_parallel, options.compile.rank}));
  return opened;
}

Expected<PreparedArtifact> prepare_for(const OpenedModel& opened, const EngineOptions& options, const ProgressFn& progress) {
  return first_use::resolve_artifact(options, opened.source.config, opened.module.ir_text, progress);
}

}  // namespace

Expected<PreparedArtifact> prepare_artifact(const EngineOptions& options, const ProgressFn& progress) {
  AC_ASSIGN_OR_RETURN(OpenedModel opened, open_for_runtime(options));
  return prepare_for(opened, options, progress);
}

Expected<std::unique_ptr<Engine>> load_engine(const EngineOptions& options, const ProgressFn& progress) {
  AC_ASSIGN_OR_RETURN(OpenedModel opened, open_for_runtime(options));
  // A model the engine refuses before it looks for an artifact (no weights, not a language model) is
  // refused now, by the engine and in its words, before anything is compiled for it.
  if (!opened.source.weights || !opened.source.is_language_model()) return Engine::load(options, progress);
  AC_ASSIGN_OR_RETURN(PreparedArtifact prepared, prepare_for(opened, options, progress));
  EngineOptions load = options;
  load.artifact = prepared.dir;
  return Engine::load(load, progress);
}

Expected<std::unique_ptr<FunctionRunner>> load_function_runner(const EngineOptions& options, const std::string& function,
                                                               const ProgressFn& progress, const FunctionRunnerOptions& runner) {
  AC_ASSIGN_OR_RETURN(OpenedModel opened, open_for_runtime(options));
  // As above: a function the module lacks is the runner's error, before anything is compiled.
  if (!opened.module.module.find_function(function)) return FunctionRunner::load(options, function, runner);
  AC_ASSIGN_OR_RETURN(PreparedArtifact prepared, prepare_for(opened, options, progress));
  EngineOptions load = options;
  load.artifact = prepared.dir;
  return FunctionRunner::load(load, function, runner);
}

}  // namespace agentcompile
