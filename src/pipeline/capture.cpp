// Capture (DESIGN.md, "capture"): the model opened for its shapes (compiling needs no weight values)
// and its IR module as the compiler and the runtime both take it (emit/model_module.h): a builder's
// graph, or a captured graph raised to semantic ops by recognition, with a progress line per
// recognition rule that fired.
#include "pipeline/stages.h"

namespace agentcompile::pipeline {

Expected<CapturedModel> capture_model(const CompileOptions& options, const ProgressFn& say) {
  CapturedModel model;
  AC_ASSIGN_OR_RETURN(const frontend::WeightFormatOptions formats, frontend::weight_format_options(options.quantize, options.dequantize, /*gpu=*/true, options.quantize_head));
  AC_ASSIGN_OR_RETURN(model.source, frontend::open_model(options.model, /*with_weights=*/false, formats));
  AC_ASSIGN_OR_RETURN(model.module, emit::model_module(model.source, options.batch_decode, {options.tensor_parallel, options.rank}));
  if (options.tensor_parallel > 0)
    say("shard: rank " + std::to_string(options.rank) + " of " + std::to_string(options.tensor_parallel) + " (tensor parallel)");
  for (const auto& line : model.module.recognized) say("recognize: " + line);
  return model;
}

}  // namespace agentcompile::pipeline
