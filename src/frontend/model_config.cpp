// config.json -> ModelConfig for the llama, qwen2 and qwen3 families.
//
// Accepts both spellings transformers has used: `rope_theta` + `rope_scaling` (4.x) and
// `rope_parameters` (5.x); `torch_dtype` and `dtype`.
#include "frontend/model_config.h"

#include <algorithm>
#include <fstream>

#include "frontend/config_invariants.h"

namespace agentcompile::frontend {

namespace {

Status key_error(const std::string& source, const std::string& key, const std::string& what) {
  return error(ErrorCode::kInvalidArgument, source + ": key '" + key + "' " + what);
}

Expected<int64_t> get_int(const nlohmann::json& json, const std::string& source, const std::string& key,
                          std::optional<int64_t> fallback = std::nullopt) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) {
    if (fallback) return *fallback;
    return error(ErrorCode::kNotFound, source + ": missing required key '" + key + "'");
  }
  if (!it->is_number_integer()) return key_error(source, key, "must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

Expected<double> get_number(const nlohmann::json& json, const std::string& source, const std::string& key,
                            double fallback) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return fallback;
  if (!it->is_number()) return key_error(source, key, "must be a number, got " + it->dump());
  return it->get<double>();
}

Expected<bool> get_bool(const nlohmann::json& json, const std::string& source, const std::string& key, bool fallback) {
  auto it = json.find(key);
  if (it == json.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return key_error(source, key, "must be true or false, got " + it->dump());
  return it->get<bool>();
}

Status parse_rope(const nlohmann::json& json, const std::string& source, ModelConfig& config) {
  // transformers 5 folds theta and scaling into rope_parameters; 4.x has rope_theta + rope_scaling.
  nlohmann::json scaling;
  if (auto it = json.find("rope_parameters"); it != json.end() && it->is_object()) {
    scaling = *it;
    AC_ASSIGN_OR_RETURN(config.rope_theta, get_number(*it, source + " rope_parameters", "rope_theta", 10000.0));
  } else {
    AC_ASSIGN_OR_RETURN(config.rope_theta, get_number(json, source, "rope_theta", 10000.0));
    if (auto sit = json.find("rope_scaling"); sit != json.end() && !sit->is_null()) {
      if (!sit->is_object()) return key_error(source, "rope_scaling", "must be an object or null");
      scaling = *sit;
    }
  }
  if (config.rope_theta <= 0) return key_error(source, "rope_theta", "must be positive");
  if (scaling.is_null()) return Status::ok();
  std::string type = "default";
  if (auto tit = scaling.find("rope_type"); tit != scaling.end() && tit->is_string()) type = *tit;
  else if (auto tit2 = scaling.find("type"); tit2 != scaling.end() && tit2->is_string()) type = *tit2;
  if (type == "default") return Status::ok();
  if (type != "llama3") return key_error(source, "rope_scaling.rope_type", "'" + type + "' is not supported (default, llama3)");
  const std::string where = source + " rope_scaling";
  RopeScaling& rope = config.rope_scaling;
  rope.type = "llama3";
  AC_ASSIGN_OR_RETURN(rope.factor, get_number(scaling, where, "factor", 8.0));
  AC_ASSIGN_OR_RETURN(rope.low_freq_factor, get_number(scaling, where, "low_freq_factor", 1.0));
  AC_ASSIGN_OR_RETURN(rope.high_freq_factor, get_number(scaling, where, "high_freq_factor", 4.0));
  AC_ASSIGN_OR_RETURN(rope.original_max_position, get_int(scaling, where, "original_max_position_embeddings", 8192));
  if (rope.factor <= 0 || rope.high_freq_factor <= rope.low_freq_factor || rope.original_max_position <= 0)
    return key_error(source, "rope_scaling", "has inconsistent llama3 factors");
  return Status::ok();
}

Expected<ir::DType> parse_torch_dtype(const nlohmann::json& json, const std::string& source) {
  std::string name = "bfloat16";
  for (const char* key : {"dtype", "torch_dtype"}) {
    auto it = json.find(key);
    if (it != json.end() && it->is_string()) {
      name = *it;
      break;
    }
  }
  if (name == "float16" || name == "half") return ir::DType::kF16;
  if (name == "bfloat16") return ir::DType::kBF16;
  if (name == "float32" || name == "float") return ir::DType::kF32;
  return key_error(source, "torch_dtype", "'" + name + "' is not supported (float16, bfloat16, float32)");
}

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = {"llama", "qwen2", "qwen3"};
  return types;
}

Expected<ModelConfig> parse_hf_config(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) return error(ErrorCode::kParse, source + ": config must be a JSON object");
  ModelConfig config;
  config.raw = json;
  auto type_it = json.find("model_type");
  if (type_it == json.end() || !type_it->is_string())
    return error(ErrorCode::kNotFound, source + ": missing required key 'model_type'");
  config.model_type = *type_it;
  const auto& types = supported_model_types();
  if (std::find(types.begin(), types.end(), config.model_type) == types.end())
    return error(ErrorCode::kUnsupported, source + ": model_type '" + config.model_type +
                                              "' is not supported (supported: llama, qwen2, qwen3)");

  AC_ASSIGN_OR_RETURN(config.hidden_size, get_int(json, source, "hidden_size"));
  AC_ASSIGN_OR_RETURN(config.intermediate_size, get_int(json, source, "intermediate_size"));
  AC_ASSIGN_OR_RETURN(config.num_layers, get_int(json, source, "num_hidden_layers"));
  AC_ASSIGN_OR_RETURN(config.num_heads, get_int(json, source, "num_attention_heads"));
  AC_ASSIGN_OR_RETURN(config.num_kv_heads, get_int(json, source, "num_key_value_heads", config.num_heads));
  AC_ASSIGN_OR_RETURN(config.vocab_size, get_int(json, source, "vocab_size"));
  AC_ASSIGN_OR_RETURN(config.max_position_embeddings, get_int(json, source, "max_position_embeddings", 2048));
  for (auto [key, value] : {std::pair{"hidden_size", config.hidden_size}, {"intermediate_size", config.intermediate_size},
                            {"num_hidden_layers", config.num_layers}, {"num_attention_heads", config.num_heads},
                            {"num_key_value_heads", config.num_kv_heads}, {"vocab_size", config.vocab_size},
                            {"max_position_embeddings", config.max_position_embeddings}})
    if (value <= 0) return key_error(source, key, "must be positive, got " + std::to_string(value));
  if (config.num_heads % config.num_kv_heads != 0)
    return key_error(source, "num_key_value_heads", "(" + std::to_string(config.num_kv_heads) +
                                                       ") must divide num_attention_heads (" +
                                                       std::to_string(config.num_heads) + ")");
  if (config.hidden_size % config.num_heads != 0 && !json.contains("head_dim"))
    return key_error(source, "head_dim", "is absent and hidden_size is not a multiple of num_attention_heads");
  AC_ASSIGN_OR_RETURN(config.head_dim, get_int(json, source, "head_dim", config.hidden_size / config.num_heads));
  if (config.head_dim <= 0 || config.head_dim % 2 != 0)
    return key_error(source, "head_dim", "must be positive and even, got " + std::to_string(config.head_dim));
  AC_ASSIGN_OR_RETURN(config.rms_norm_eps, get_number(json, source, "rms_norm_eps", 1e-6));
  AC_ASSIGN_OR_RETURN(config.initializer_range, get_number(json, source, "initializer_range", 0.02));
  AC_TRY(parse_rope(json, source, config));
  AC_ASSIGN_OR_RETURN(config.tie_word_embeddings, get_bool(json, source, "tie_word_embeddings", false));
  AC_ASSIGN_OR_RETURN(config.dtype, parse_torch_dtype(json, source));

  if (auto act = json.find("hidden_act"); act != json.end() && act->is_string() && *act != "silu")
    return key_error(source, "hidden_act", "'" + act->get<std::string>() + "' is not supported (silu)");

  AC_ASSIGN_OR_RETURN(bool attention_bias, get_bool(json, source, "attention_bias", false));
  if (config.model_type == "qwen2") {
    config.qkv_bias = true;  // Qwen2 always carries q/k/v biases and none on o_proj
  } else {
    config.qkv_bias = attention_bias;
    config.o_bias = attention_bias;
  }
  if (config.model_type == "llama") {
    AC_ASSIGN_OR_RETURN(config.mlp_bias, get_bool(json, source, "mlp_bias", false));
  }
  config.qk_norm = config.model_type == "qwen3";

  if (auto bos = json.find("bos_token_id"); bos != json.end() && bos->is_number_integer()) config.bos_token_id = bos->get<int64_t>();
  if (auto eos = json.find("eos_token_id"); eos != json.end()) {
    if (eos->is_number_integer()) config.eos_token_ids.push_back(eos->get<int64_t>());
    else if (eos->is_array())
      for (const auto& id : *eos)
        if (id.is_number_integer()) config.eos_token_ids.push_back(id.get<int64_t>());
  }
  AC_TRY(check_config_invariants(config, source));
  return config;
}

Expected<ModelConfig> read_hf_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return error(ErrorCode::kNotFound, path.string() + ": cannot open config");
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return error(ErrorCode::kParse, path.string() + ": invalid JSON");
  return parse_hf_config(json, path.string());
}

}  // namespace agentcompile::frontend
