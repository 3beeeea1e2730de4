// The runtime's public API: load a model with its compiled artifact, then generate tokens.
//
//   agentcompile::EngineOptions options;
//   options.model = "checkpoints/qwen3-1.7b";
//   auto engine = agentcompile::load_engine(options, progress);   // compiles on first use (first_use.h)
//   agentcompile::GenerateOptions g;
//   g.max_new_tokens = 64;
//   auto result = (*engine)->generate(prompt_ids, g, [](int32_t id) { ...; return true; });
//
// The engine runs the prefill and decode functions of the artifact with the kernels the compiler
// selected: weights uploaded once, a static KV cache for the chosen context, a decode step captured
// once into a CUDA graph and replayed per token, sampling on the device. Errors (a prompt longer than
// the context, not enough device memory, a kernel missing from the artifact) are returned, never
// printed; no wrong kernel ever runs.
//
// Engine::load itself never compiles: it runs from an artifact that fits the model on this GPU, or
// says why none does. agentcompile::load_engine (first_use.h, which links the compiler) compiles one
// first when needed; a process that only runs models links the runtime alone.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agentcompile/compiler.h"
#include "agentcompile/status.h"

namespace agentcompile {

struct EngineOptions {
  std::filesystem::path model;        // HF checkpoint directory or .gguf file (weights needed)
  std::filesystem::path artifact;     // a compiled artifact to use; empty: the model's own in the cache
  std::filesystem::path cache_dir;    // empty: ~/.cache/agentcompile
  int64_t max_context = 0;            // KV-cache rows; 0: the model's maximum, or what memory allows
  int64_t prefill_chunk = 0;          // longest prefill call; longer prompts run in chunks; 0: min(context, 8192)
  bool cuda_graph = true;             // capture the decode step once and replay it
  bool programmatic_launch = true;    // decode kernels start while their producer drains (sm_90+ only)
  // > 0: decode_rows() serves this many sequences (at most kMaxBatchRows), each in a KV slot of
  // max_context rows of a cache of their own; needs an artifact compiled with compile.batch_decode.
  int64_t batch_slots = 0;
  CompileOptions compile;             // the model's own artifact is the one compiled with these (first_use.h compiles it;
                                      // model/output are set there)
  // Tensor parallelism: with compile.tensor_parallel >= 1 the engine runs the module of rank compile.rank
  // (src/shard) on GPU `device`, loading only that rank's weights, and its all_reduce / all_gather
  // regions go through an NCCL communicator of the ranks, created from `nccl_id` (nccl_unique_id(), the
  // same bytes for every rank; empty with one rank). One engine per rank, each on a thread of its own.
  int device = 0;
  std::string nccl_id;
};

// A new NCCL unique id for the ranks of one tensor-parallel group (NCCL loaded at run time).
Expected<std::string> nccl_unique_id();

struct SamplingOptions {
  float temperature = 0.f;            // 0: greedy
  int top_k = 0;                      // 0: off
  float top_p = 1.f;                  // 1: off
  float repetition_penalty = 1.f;     // 1: off
  uint64_t seed = 0;
};

struct GenerateOptions {
  int64_t max_new_tokens = 128;
  SamplingOptions sampling;
  bool stop_at_eos = true;            // stop on the model's EOS ids (config / generation_config.json)
  std::vector<int32_t> extra_stop_ids;
};

struct GenerateResult {
  std::vector<int32_t> tokens;        // generated ids (the stop token included when one ended it)
  std::string stop_reason;            // "eos", "max_new_tokens", "callback"
  double prefill_ms = 0;              // prompt in, first token sampled (device time)
  double decode_ms = 0;               // every later token (device + host streaming)
  int64_t decode_steps = 0;
};

struct EngineInfo {
  std::string model_type, dtype, gpu, artifact, artifact_key;
  int64_t max_context = 0;
  std::string max_context_reason;     // "model maximum", "requested", "limited by device memory"
  int64_t prefill_chunk = 0;
  int64_t vocab_size = 0;
  std::vector<int32_t> eos_ids;
  int64_t weight_bytes = 0, kv_cache_bytes = 0, activation_bytes = 0, workspace_bytes = 0;
  int64_t decode_weight_bytes = 0;    // weight bytes one decode step reads, in the formats the module declares
  std::string weight_formats;         // "as stored", "--quantize int4:g128", "--dequantize"
  size_t decode_launches = 0;         // kernel launches in one decode step (sampling included)
  bool cuda_graph = true;
  bool programmatic_launch = false;   // in effect (requested and supported by the GPU)
  int64_t batch_slots = 0;            // sequences decode_rows() serves (EngineOptions::batch_slots)
  std::string all_reduce;             // tensor parallelism: "nccl", or "peer" (small rows over peer memory); "" without
  double all_reduce_us = 0;           // one decode-row all-reduce on that transport, timed at load (the ranks' mean); 0 at one rank
  int64_t decode_all_reduces = 0;     // all-reduces in one decode step
};

// Rows one decode_rows() call takes: the largest batch bucket decode_batch is compiled for (plan/sizes.cpp).
inline constexpr int64_t kMaxBatchRows = 16;

// What a batched step's sampling needs of one row.
enum class RowNeed : uint8_t { kNothing, kArgmax, kLogits };

struct DecodedRows {
  std::vector<int32_t> argmax;  // per row: the argmax (lowest id among equal maxima) where kArgmax was asked, else -1
  std::vector<float> logits;    // the kLogits rows' logits, [those rows, vocab] in row order
};

// Called with each generated token as soon as it is known; return false to stop.
using TokenCallback = std::function<bool(int32_t token)>;

class Engine {
 public:
  static Expected<std::unique_ptr<Engine>> load(const EngineOptions& options, const ProgressFn& progress = {});
  ~Engine();

  Expected<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const TokenCallback& on_token = {});

  // Teacher forcing: the first `prefill` ids go through prefill (one call per prefix length, so every
  // position's logits come from a real prefill call), the rest one at a time through the decode step.
  // Returns float32 logits [ids.size(), vocab], row i after consuming ids[i].
  Expected<std::vector<float>> teacher_forced_logits(std::span<const int32_t> ids, int64_t prefill);

  // Batched decode (EngineOptions::batch_slots > 0): one step over 1..kMaxBatchRows rows, row i the
  // token tokens[i] of the sequence in KV slot slots[i] at position positions[i] (a prompt chunk is
  // rows of one slot at consecutive positions). Rows of several sequences run as one call of
  // decode_batch (ir/decode_batch.h; with CUDA graphs on, a graph per row count captured at load);
  // rows of one sequence run on its slot through the single-sequence functions, which are faster for
  // it: the decode step for one row (a graph per slot and decode bucket, captured at load), prefill
  // for a chunk (then up to prefill_chunk rows, provided no row before the last needs anything).
  // Returns float32 logits [rows, vocab]; the caller samples. generate() keeps its own cache.
  Expected<std::vector<float>> decode_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions,
                                           std::span<const int32_t> slots);
  // The same step, returning of each row only what its sampler needs (`needs`, one per row): nothing
  // (a prompt row before the chunk's last), its greedy token (the argmax, computed on the device where
  // the artifact has the row-argmax kernel), or its logits row. A greedy server step copies a few
  // bytes a row instead of the vocabulary's floats.
  Expected<DecodedRows> decode_rows(std::span<const int32_t> tokens, std::span<const int32_t> positions, std::span<const int32_t> slots,
                                    std::span<const RowNeed> needs);

  const EngineInfo& info() const;

  class Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentcompile
