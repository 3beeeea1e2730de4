// Llama (1/2/3, incl. llama3 rope scaling): pre-norm decoder, SwiGLU MLP, optional attention/mlp bias.
#include "frontend/models/architectures.h"

namespace agentcompile::frontend::models {

Expected<ir::Module> build_llama(const ModelConfig& config, const BuildOptions& options) {
  blocks::ArchTraits traits;
  traits.qkv_bias = config.qkv_bias;
  traits.o_bias = config.o_bias;
  traits.mlp_bias = config.mlp_bias;
  return build_llama_like(config, options, traits);
}

Expected<ir::Module> build_llama_like(const ModelConfig& config, const BuildOptions& options,
                                      const blocks::ArchTraits& traits) {
  ir::Module module;
  module.name = config.model_type;
  blocks::declare_params(module, config, traits);
  blocks::declare_states(module, config);
  AC_TRY(blocks::build_decoder_function(module, config, traits, "prefill", ir::Dim::T(), options.prefill_all_logits));
  AC_TRY(blocks::build_decoder_function(module, config, traits, "decode", ir::Dim::of(1), true));
  return module;
}

}  // namespace agentcompile::frontend::models
