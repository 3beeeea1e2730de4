// Finding a model's tokenizer: a Hugging Face checkpoint directory (tokenizer.json, with
// tokenizer_config.json beside it when present), a tokenizer.json named directly, or a .gguf file (or a
// directory holding exactly one).
#pragma once

#include <filesystem>

#include "agentcompile/status.h"

namespace agentcompile::tokenizer {

struct TokenizerFiles {
  enum class Kind { kTokenizerJson, kGguf };
  Kind kind = Kind::kTokenizerJson;
  std::filesystem::path file;    // tokenizer.json or the .gguf
  std::filesystem::path config;  // tokenizer_config.json; empty when absent or for GGUF
};

// Errors: kNotFound naming the path and what was looked for.
Expected<TokenizerFiles> locate_tokenizer(const std::filesystem::path& model);

}  // namespace agentcompile::tokenizer
