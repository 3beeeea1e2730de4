// How much context fits: weights + KV cache + activations + workspace + a reserve against the free
// device memory. A context the user asks for that does not fit is refused with the estimate; with no
// request the engine takes the model's maximum, or as many rows as memory allows, and says which.
#pragma once

#include <string>

#include "agentcompile/engine.h"
#include "agentcompile/status.h"
#include "frontend/model_config.h"
#include "ir/graph.h"
#include "runtime/artifact_reader.h"

namespace agentcompile::runtime {

struct MemoryBudget {
  int64_t context = 0;
  std::string context_reason;
  int64_t prefill_chunk = 0;
  int64_t weights = 0, kv_cache = 0, activations = 0, workspace = 0, reserve = 0, free = 0;
  std::string summary;  // one line for the progress log
};

// `batch`: decode_batch when options.batch_slots > 0: its arena and workspace at kMaxBatchRows rows, and
// batch_slots more KV caches of the context (each context row costs 1 + batch_slots rows).
Expected<MemoryBudget> plan_budget(const ir::Module& module, const ir::Function& prefill, const ir::Function& decode,
                                   const LoadedArtifact& artifact, const frontend::ModelConfig& config, const EngineOptions& options,
                                   const ir::Function* batch = nullptr);

}  // namespace agentcompile::runtime
