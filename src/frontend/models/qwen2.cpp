// Qwen2: Llama's graph with biases on the q/k/v projections (none on o_proj).
#include "frontend/models/architectures.h"

namespace agentcompile::frontend::models {

Expected<ir::Module> build_qwen2(const ModelConfig& config, const BuildOptions& options) {
  blocks::ArchTraits traits;
  traits.qkv_bias = true;
  return build_llama_like(config, options, traits);
}

}  // namespace agentcompile::frontend::models
