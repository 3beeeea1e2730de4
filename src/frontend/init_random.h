// Randomly initialized Hugging Face checkpoints: config.json + safetensors (sharded like transformers
// shards them) that `AutoModelForCausalLM.from_pretrained` loads unchanged. They let every stage past
// the frontend be tested at real model sizes without downloading weights.
//
// Values are a pure function of (seed, tensor name, element index): each tensor gets a seed from the
// run's seed and the FNV-1a hash of its name, and each fixed-size chunk of it a seed of its own, so the
// output does not depend on the thread count or on the order tensors are generated in.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "frontend/model_config.h"
#include "ir/dtype.h"

namespace agentcompile::frontend {

struct RandomCheckpointSummary {
  std::vector<std::filesystem::path> files;  // every file written, config first
  int64_t parameters = 0;                    // elements over all tensors
  uint64_t tensor_bytes = 0;                 // bytes of tensor data (the index's total_size)
};

// Mean and standard deviation a tensor is drawn from: norm weights (names ending in "norm.weight")
// ~ 1 + N(0, 0.1), deliberately not all ones so a dropped norm weight shows in the outputs; every other
// tensor ~ N(0, config.initializer_range).
struct InitDistribution {
  float mean;
  float stddev;
};
InitDistribution init_distribution(const std::string& name, const ModelConfig& config);

// Fills `out` with `elements` values of `dtype` (F32, F16 or BF16) drawn from `dist`, exactly as
// write_random_checkpoint does for a tensor of that name. `threads` changes only the speed.
void fill_random_tensor(const std::string& name, uint64_t seed, InitDistribution dist, ir::DType dtype,
                        uint64_t elements, void* out, unsigned threads);

// Writes config.json (config.raw with torch_dtype, and dtype when present, set to `dtype`),
// generation_config.json (when bos/eos ids are known) and model.safetensors, or model-0000K-of-0000N
// .safetensors shards plus model.safetensors.index.json when the tensors exceed `max_shard_bytes`.
// The files are complete before any of `out_dir` changes (frontend/checkpoint_output.h): a missing
// or empty `out_dir` receives them, one a previous run wrote has its checkpoint replaced (and its
// stale shards removed), and any other non-empty directory is refused unless `force`, which
// replaces only the files of the new checkpoint.
Status write_random_checkpoint(const ModelConfig& config, ir::DType dtype, uint64_t seed,
                               const std::filesystem::path& out_dir, uint64_t max_shard_bytes,
                               RandomCheckpointSummary* summary = nullptr, bool force = false);

}  // namespace agentcompile::frontend
