// The memory estimate behind the context decision.
#include "runtime/memory_budget.h"

#include <cstdio>

#include "runtime/device_weights.h"
#include "runtime/executor.h"
#include "runtime/kv_cache.h"
#include "runtime/memory_plan.h"
#include "gpu/cuda_driver.h"
#include "gpu/driver_api.h"

namespace agentcompile::runtime {

namespace {

constexpr int64_t kDefaultPrefillChunk = 8192;
constexpr int64_t kReserve = int64_t{768} << 20;  // context, cuBLAS, graphs, sampler, fragmentation

std::string gib(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

}  // namespace

Expected<MemoryBudget> plan_budget(const ir::Module& module, const ir::Function& prefill, const ir::Function& decode,
                                   const LoadedArtifact& artifact, const frontend::ModelConfig& config, const EngineOptions& options,
                                   const ir::Function* batch) {
  MemoryBudget b;
  size_t free_bytes = 0, total_bytes = 0;
  AC_CU(gpu::driver_api()->MemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo");
  b.free = static_cast<int64_t>(free_bytes);
  const int64_t model_max = config.max_position_embeddings > 0 ? config.max_position_embeddings : 4096;
  if (options.max_context < 0) return error(ErrorCode::kInvalidArgument, "--max-context must be positive");
  if (options.prefill_chunk < 0) return error(ErrorCode::kInvalidArgument, "--prefill-chunk must be positive");
  const int64_t wanted = options.max_context > 0 ? options.max_context : model_max;
  b.prefill_chunk = std::min(wanted, options.prefill_chunk > 0 ? options.prefill_chunk : kDefaultPrefillChunk);

  b.weights = DeviceWeights::bytes_needed(module);
  AC_ASSIGN_OR_RETURN(MemoryPlan prefill_plan, plan_memory(prefill, artifact.functions.at("prefill").sites, ir::SymbolBindings{b.prefill_chunk, 1}));
  AC_ASSIGN_OR_RETURN(MemoryPlan decode_plan, plan_memory(decode, artifact.functions.at("decode").sites, ir::SymbolBindings{1, 1}));
  b.activations = static_cast<int64_t>(prefill_plan.arena_bytes + decode_plan.arena_bytes) + b.prefill_chunk * 4;
  b.workspace = FunctionExecutor::workspace_bytes_needed(artifact, "prefill", b.prefill_chunk) +
                FunctionExecutor::workspace_bytes_needed(artifact, "decode", 1);
  if (batch) {
    AC_ASSIGN_OR_RETURN(MemoryPlan batch_plan, plan_memory(*batch, artifact.functions.at(batch->name).sites, ir::SymbolBindings{kMaxBatchRows, 1}));
    b.activations += static_cast<int64_t>(batch_plan.arena_bytes);
    b.workspace += FunctionExecutor::workspace_bytes_needed(artifact, batch->name, kMaxBatchRows);
  }
  b.reserve = kReserve + config.vocab_size * 8;
  // A context row is one row of the single-sequence cache and one of every batch slot's.
  const int64_t per_row = KvCache::bytes_per_row(module) * (1 + (batch ? options.batch_slots : 0));
  const int64_t fixed = b.weights + b.activations + b.workspace + b.reserve;

  if (options.max_context > 0) {
    b.context = options.max_context;
    b.context_reason = "requested";
    b.prefill_chunk = std::min(b.prefill_chunk, b.context);
    const int64_t need = fixed + per_row * b.context;
    if (need > b.free)
      return error(ErrorCode::kResourceExhausted,
                   "a context of " + std::to_string(b.context) + " tokens needs about " + gib(need) + " of device memory (weights " + gib(b.weights) +
                       ", KV cache " + gib(per_row * b.context) + ", activations " + gib(b.activations) + ", workspace " + gib(b.workspace) +
                       ", reserve " + gib(b.reserve) + "), but the GPU has " + gib(b.free) + " free; lower --max-context (at most about " +
                       std::to_string(std::max<int64_t>(0, (b.free - fixed) / per_row)) + " tokens fit)");
    if (b.context > model_max)
      return error(ErrorCode::kInvalidArgument, "a context of " + std::to_string(b.context) + " tokens exceeds the model's max_position_embeddings (" +
                                                    std::to_string(model_max) + ")");
  } else {
    const int64_t fits = (b.free - fixed) / per_row;
    if (fits < 1)
      return error(ErrorCode::kResourceExhausted, "the model needs about " + gib(fixed) + " before any KV cache (weights " + gib(b.weights) +
                                                      "), but the GPU has " + gib(b.free) + " free");
    b.context = std::min(model_max, fits);
    b.context_reason = b.context == model_max ? "the model's maximum (max_position_embeddings)" : "limited by free device memory";
    b.prefill_chunk = std::min(b.prefill_chunk, b.context);
  }
  b.kv_cache = per_row * b.context;
  b.summary = "context " + std::to_string(b.context) + " tokens (" + b.context_reason + ")" +
              (batch ? ", " + std::to_string(options.batch_slots) + " batch slots beside the single sequence's cache" : std::string()) + ", prefill chunks of up to " + std::to_string(b.prefill_chunk) +
              " tokens; device memory: weights " + gib(b.weights) + ", KV cache " + gib(b.kv_cache) + ", activations " + gib(b.activations) +
              ", workspace " + gib(b.workspace) + " of " + gib(b.free) + " free";
  return b;
}

}  // namespace agentcompile::runtime
