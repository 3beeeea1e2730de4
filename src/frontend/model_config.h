// The architecture-level description of a decoder-only transformer, read from a Hugging Face
// `config.json` or from GGUF metadata. Compiling needs only this: shapes, not weight values.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "ir/dtype.h"

namespace agentcompile::frontend {

struct RopeScaling {
  std::string type = "none";  // "none" or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position = 8192;
};

struct ModelConfig {
  std::string model_type;  // llama, qwen2, qwen3
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // given, or hidden_size / num_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  // q/k/v projections carry a bias (qwen2 always; others by attention_bias)
  bool o_bias = false;    // o_proj carries a bias (llama/qwen3 attention_bias)
  bool mlp_bias = false;
  bool qk_norm = false;   // per-head RMSNorm on q and k before RoPE (qwen3)
  ir::DType dtype = ir::DType::kBF16;  // torch_dtype / dtype of the checkpoint
  double initializer_range = 0.02;
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;

  nlohmann::json raw;  // the config as read, so it can be written back unchanged
};

// How a configuration's source names config.json's keys in messages (config.json key -> words): a
// GGUF file maps them to its own ("num_hidden_layers" -> "GGUF metadata key 'llama.block_count'").
// Keys without an entry are "key '<name>'".
using ConfigKeyNames = std::map<std::string, std::string>;
std::string config_key_name(const ConfigKeyNames& names, const std::string& key);

// Parses and checks a config; errors name the source and the key at fault (as `names` spells it).
// Keys that change what the model computes are honoured or refused (see model_config.cpp).
Expected<ModelConfig> parse_hf_config(const nlohmann::json& json, const std::string& source, const ConfigKeyNames& names = {});
Expected<ModelConfig> read_hf_config(const std::filesystem::path& path);

// Architectures with a graph builder.
const std::vector<std::string>& supported_model_types();

}  // namespace agentcompile::frontend
