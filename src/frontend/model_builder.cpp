// Dispatch from model_type to the architecture's builder.
#include "frontend/model_builder.h"

#include "frontend/models/architectures.h"

namespace agentcompile::frontend {

Expected<ir::Module> build_module(const ModelConfig& config, const BuildOptions& options) {
  if (config.model_type == "llama") return models::build_llama(config, options);
  if (config.model_type == "qwen2") return models::build_qwen2(config, options);
  if (config.model_type == "qwen3") return models::build_qwen3(config, options);
  return error(ErrorCode::kUnsupported, "no graph builder for model_type '" + config.model_type + "'");
}

}  // namespace agentcompile::frontend
