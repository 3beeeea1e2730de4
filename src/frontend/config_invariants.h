// The one check of a model configuration's invariants, run on every configuration the frontend
// produces (config.json and GGUF metadata both go through parse_hf_config): every size positive and
// bounded, so no product of sizes (a tensor's elements, its bytes, the parameter count) can
// overflow and no tool tries to allocate more than a host or a GPU could ever hold; numbers that
// must be positive and finite are; token ids lie inside the vocabulary.
//
// The bounds are far above every published model (the largest have hidden 16384, 126 layers, a
// vocabulary of 256k, contexts of 10M tokens and 2T parameters) and far below where arithmetic
// breaks, so they refuse only configurations that are broken or hostile.
#pragma once

#include <string>

#include "agentcompile/status.h"
#include "frontend/model_config.h"

namespace agentcompile::frontend {

struct ConfigLimits {
  static constexpr int64_t kHiddenSize = int64_t{1} << 16;
  static constexpr int64_t kIntermediateSize = int64_t{1} << 18;
  static constexpr int64_t kLayers = 1024;
  static constexpr int64_t kHeads = 1024;
  static constexpr int64_t kHeadDim = 1024;
  static constexpr int64_t kVocabSize = int64_t{1} << 24;
  static constexpr int64_t kContext = int64_t{1} << 24;
  static constexpr double kParameters = 4e12;
};

// kInvalidArgument naming `source` and the key at fault (as `names` spells it).
Status check_config_invariants(const ModelConfig& config, const std::string& source, const ConfigKeyNames& names = {});

}  // namespace agentcompile::frontend
