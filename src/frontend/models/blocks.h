// Shared building blocks of decoder-only transformers: norm, attention, MLP, and the decoder body.
// Architecture files configure these; nothing architecture-specific lives here.
#pragma once

#include <string>

#include "frontend/model_config.h"
#include "ir/graph.h"

namespace agentcompile::frontend::blocks {

// What varies between llama-like architectures, beyond the numbers in ModelConfig.
struct ArchTraits {
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  bool qk_norm = false;
};

// Declares every parameter of the architecture on the module (names follow Hugging Face).
void declare_params(ir::Module& module, const ModelConfig& config, const ArchTraits& traits);
// Declares the per-layer KV-cache states.
void declare_states(ir::Module& module, const ModelConfig& config);

ir::ValueId build_norm(ir::FunctionBuilder& b, ir::ValueId x, const std::string& weight_name, double eps);
ir::ValueId build_linear(ir::FunctionBuilder& b, ir::ValueId x, const std::string& prefix, bool bias);
ir::ValueId build_attention(ir::FunctionBuilder& b, const ModelConfig& config, const ArchTraits& traits, int layer,
                            ir::ValueId x, ir::ValueId pos);
ir::ValueId build_mlp(ir::FunctionBuilder& b, const ModelConfig& config, const ArchTraits& traits, int layer,
                      ir::ValueId x);

// Builds one function: embedding, layers, final norm, lm_head. `tokens` is i32[T] (T symbolic) or i32[1].
Status build_decoder_function(ir::Module& module, const ModelConfig& config, const ArchTraits& traits,
                              const std::string& name, ir::Dim tokens_dim, bool all_logits);

}  // namespace agentcompile::frontend::blocks
