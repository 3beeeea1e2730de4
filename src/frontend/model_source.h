// Opening a model from what a user names: a Hugging Face checkpoint directory, its config.json alone,
// or a GGUF file. Both checkpoint formats end in the same ModelConfig and HF-named WeightStore, so
// every later stage is format-blind. Weights are only opened when asked for: `inspect` and `compile`
// need shapes alone.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "agentcompile/status.h"
#include "frontend/model_config.h"
#include "frontend/weights.h"

namespace agentcompile::frontend {

enum class ModelFormat { kHfConfigOnly, kHfCheckpoint, kGguf };

struct ModelSource {
  std::filesystem::path path;
  ModelFormat format = ModelFormat::kHfConfigOnly;
  ModelConfig config;
  std::unique_ptr<WeightStore> weights;  // null unless opened with_weights
};

const char* model_format_name(ModelFormat format);

// `path` is a directory with config.json (+ safetensors), a config .json file, or a .gguf file.
// With `with_weights`, the weights are opened (memory-mapped, not read) and checked against the
// module the config implies: every tensor present, shapes (and exact dtypes) as the config says.
Expected<ModelSource> open_model(const std::filesystem::path& path, bool with_weights);

}  // namespace agentcompile::frontend
