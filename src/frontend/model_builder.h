// Architecture graph builders: ModelConfig -> IR module with a `prefill` and a `decode` function.
//
// prefill(tokens: i32[T], pos: i32[]) -> logits f32[1, V]   (last position; [T, V] with all_logits)
// decode(tokens: i32[1], pos: i32[])  -> logits f32[1, V]
// Both append to the per-layer KV-cache states kv.<layer>.k / kv.<layer>.v, [L, KV, D].
#pragma once

#include "agentcompile/status.h"
#include "frontend/model_config.h"
#include "ir/graph.h"

namespace agentcompile::frontend {

struct BuildOptions {
  bool prefill_all_logits = false;  // prefill returns logits for every position (teacher forcing, tests)
};

Expected<ir::Module> build_module(const ModelConfig& config, const BuildOptions& options = {});

}  // namespace agentcompile::frontend
