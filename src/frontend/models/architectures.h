// One builder per architecture; each is a few lines over the shared blocks.
#pragma once

#include "frontend/model_builder.h"
#include "frontend/models/blocks.h"

namespace agentcompile::frontend::models {

Expected<ir::Module> build_llama(const ModelConfig& config, const BuildOptions& options);
Expected<ir::Module> build_qwen2(const ModelConfig& config, const BuildOptions& options);
Expected<ir::Module> build_qwen3(const ModelConfig& config, const BuildOptions& options);

// What the three share once traits are chosen: params, states, prefill and decode.
Expected<ir::Module> build_llama_like(const ModelConfig& config, const BuildOptions& options,
                                      const blocks::ArchTraits& traits);

}  // namespace agentcompile::frontend::models
