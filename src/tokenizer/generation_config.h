// generation_config.json: the sampling defaults and stop tokens a checkpoint ships with.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::tokenizer {

class Tokenizer;

// Defaults are transformers' GenerationConfig defaults, except the length limits, which stay unset
// (transformers would fall back to max_length 20) so the caller's own limit applies.
struct GenerationConfig {
  std::vector<int32_t> eos_token_ids;  // generation_config.json's, then config.json's not already listed
  std::optional<int32_t> bos_token_id;
  bool do_sample = false;
  double temperature = 1.0;
  int64_t top_k = 50;
  double top_p = 1.0;
  double repetition_penalty = 1.0;
  std::optional<int64_t> max_new_tokens;
  std::optional<int64_t> max_length;
};

// Reads `model_dir`/generation_config.json and the eos/bos of `model_dir`/config.json; either file may be
// missing (a .gguf path has neither, and gets the defaults). Errors: kParse / kInvalidArgument naming
// the file and key for malformed JSON or values of the wrong type.
Expected<GenerationConfig> read_generation_config(const std::filesystem::path& model_dir);

// Every id that should end generation: the config's eos ids, then the tokenizer's not already listed.
std::vector<int32_t> stop_token_ids(const GenerationConfig& config, const Tokenizer& tokenizer);

}  // namespace agentcompile::tokenizer
