// Qwen3: Llama's graph with a per-head RMSNorm on q and k before RoPE (QK-norm).
#include "frontend/models/architectures.h"

namespace agentcompile::frontend::models {

Expected<ir::Module> build_qwen3(const ModelConfig& config, const BuildOptions& options) {
  blocks::ArchTraits traits;
  traits.qkv_bias = config.qkv_bias;
  traits.o_bias = config.o_bias;
  traits.qk_norm = true;
  return build_llama_like(config, options, traits);
}

}  // namespace agentcompile::frontend::models
