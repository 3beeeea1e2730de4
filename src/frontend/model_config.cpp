// config.json -> ModelConfig for the llama, qwen2 and qwen3 families.
//
// Accepts both spellings transformers has used: `rope_theta` + `rope_scaling` (4.x) and
// `rope_parameters` (5.x); `torch_dtype` and `dtype`. A key that changes what the model computes is
// honoured or refused, never ignored: RoPE scaling other than llama3's (or llama3's without every
// factor), partial rotary embeddings, sliding-window attention that does not cover the whole
// context, quantized weights (quantization_config). A key of the wrong JSON type is an error naming
// it, also where a default would do.
#include "frontend/model_config.h"

#include <algorithm>
#include <fstream>

#include "frontend/config_invariants.h"
#include "support/utf8.h"

namespace agentcompile::frontend {

namespace {

using nlohmann::json;

// Reads one JSON object's keys; every error names the source and the key as the source spells it.
class Reader {
 public:
  Reader(const json& object, const std::string& source, const ConfigKeyNames& names, std::string within = "")
      : object_(object), source_(source), names_(names), within_(std::move(within)) {}

  // "config.json: key 'head_dim'", "config.json: rope_scaling: key 'factor'", "x.gguf: GGUF metadata key '...'"
  std::string name(const std::string& key) const {
    return source_ + ": " + (within_.empty() ? config_key_name(names_, key) : within_ + ": key '" + key + "'");
  }
  Status refuse(const std::string& key, const std::string& what, ErrorCode code = ErrorCode::kInvalidArgument) const {
    return error(code, name(key) + " " + what);
  }
  Status missing(const std::string& key) const {
    return error(ErrorCode::kNotFound, source_ + ": " + (within_.empty() ? "" : within_ + ": ") + "missing required " +
                                           (within_.empty() ? config_key_name(names_, key) : "key '" + key + "'"));
  }
  const json* find(const std::string& key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  Expected<int64_t> integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    const json* value = find(key);
    if (!value) {
      if (fallback) return *fallback;
      return missing(key);
    }
    if (!value->is_number_integer()) return refuse(key, "must be an integer, got " + shown(*value));
    return value->get<int64_t>();
  }
  Expected<double> number(const std::string& key, std::optional<double> fallback) const {
    const json* value = find(key);
    if (!value) {
      if (fallback) return *fallback;
      return missing(key);
    }
    if (!value->is_number()) return refuse(key, "must be a number, got " + shown(*value));
    return value->get<double>();
  }
  Expected<bool> boolean(const std::string& key, bool fallback) const {
    const json* value = find(key);
    if (!value) return fallback;
    if (!value->is_boolean()) return refuse(key, "must be true or false, got " + shown(*value));
    return value->get<bool>();
  }
  Expected<std::optional<std::string>> string(const std::string& key) const {
    const json* value = find(key);
    if (!value) return std::optional<std::string>();
    if (!value->is_string()) return refuse(key, "must be a string, got " + shown(*value));
    return std::optional<std::string>(value->get<std::string>());
  }

  static std::string shown(const json& value) {
    return support::utf8::truncated(value.dump(-1, ' ', false, json::error_handler_t::replace), 80);
  }

 private:
  const json& object_;
  const std::string& source_;
  const ConfigKeyNames& names_;
  std::string within_;  // "rope_scaling" inside a nested object
};

// The RoPE scaling object: transformers 5 folds theta and scaling into rope_parameters; 4.x has
// rope_theta + rope_scaling. Only llama3's scaling is implemented, and only with every factor given:
// transformers reads each of them without a default, so a default here would be a guess.
Status parse_rope(const json& root, const Reader& top, const std::string& source, const ConfigKeyNames& names, ModelConfig& config) {
  std::string key = "rope_scaling";
  const json* scaling = nullptr;
  if (const json* parameters = top.find("rope_parameters")) {
    if (!parameters->is_object()) return top.refuse("rope_parameters", "must be an object or null, got " + Reader::shown(*parameters));
    key = "rope_parameters";
    scaling = parameters;
    AC_ASSIGN_OR_RETURN(config.rope_theta, Reader(*parameters, source, names, key).number("rope_theta", 10000.0));
  } else {
    AC_ASSIGN_OR_RETURN(config.rope_theta, top.number("rope_theta", 10000.0));
    scaling = top.find("rope_scaling");
    if (scaling && !scaling->is_object()) return top.refuse("rope_scaling", "must be an object or null, got " + Reader::shown(*scaling));
  }
  if (config.rope_theta <= 0) return top.refuse("rope_theta", "must be positive");
  for (const json* holder : {&root, scaling}) {
    if (!holder) continue;
    const Reader reader(*holder, source, names, holder == &root ? "" : key);
    AC_ASSIGN_OR_RETURN(const double partial, reader.number("partial_rotary_factor", 1.0));
    if (partial != 1.0)
      return reader.refuse("partial_rotary_factor", "is " + Reader::shown(partial) + ": partial rotary embeddings are not supported",
                           ErrorCode::kUnsupported);
  }
  if (!scaling) return Status::ok();

  const Reader reader(*scaling, source, names, key);
  std::optional<std::string> type;
  for (const char* type_key : {"rope_type", "type"}) {
    AC_ASSIGN_OR_RETURN(type, reader.string(type_key));
    if (type) break;
  }
  if (!type) {
    // rope_parameters always carries rope_theta; anything else without a type is a scaling we would guess at.
    for (const auto& [name, value] : scaling->items())
      if (name != "rope_theta" && !value.is_null())
        return top.refuse(key, "names no rope_type but sets '" + name + "': a RoPE scaling of no stated kind is not supported",
                          ErrorCode::kUnsupported);
    return Status::ok();
  }
  if (*type == "default" || *type == "none") return Status::ok();
  if (*type != "llama3")
    return reader.refuse("rope_type", "is '" + *type + "', which is not supported (default, llama3)", ErrorCode::kUnsupported);
  for (const char* factor : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"})
    if (!reader.find(factor))
      return error(ErrorCode::kNotFound, reader.name(factor) + " is missing: llama3 scaling needs factor, low_freq_factor, "
                                                               "high_freq_factor and original_max_position_embeddings");
  RopeScaling& rope = config.rope_scaling;
  rope.type = "llama3";
  AC_ASSIGN_OR_RETURN(rope.factor, reader.number("factor", std::nullopt));
  AC_ASSIGN_OR_RETURN(rope.low_freq_factor, reader.number("low_freq_factor", std::nullopt));
  AC_ASSIGN_OR_RETURN(rope.high_freq_factor, reader.number("high_freq_factor", std::nullopt));
  AC_ASSIGN_OR_RETURN(rope.original_max_position, reader.integer("original_max_position_embeddings"));
  if (!(rope.factor > 0) || !(rope.high_freq_factor > rope.low_freq_factor) || !(rope.low_freq_factor > 0) || rope.original_max_position <= 0)
    return top.refuse(key, "has inconsistent llama3 factors (factor > 0, high_freq_factor > low_freq_factor > 0, original_max_position_embeddings > 0)");
  return Status::ok();
}

// Sliding-window attention is not implemented: a configuration that uses it on some layer is refused
// unless its window covers the whole context, where it is the same as full attention. Which layers
// slide follows transformers: `layer_types` (5.x), else use_sliding_window for the layers from
// max_window_layers on. Where transformers' versions disagree the configuration is refused rather
// than guessed at: without max_window_layers, the eager and SDPA paths of 4.x slid every layer. A
// window that is not given is transformers' default for Qwen2 and Qwen3, 4096; null means none.
Status check_sliding_window(const json& root, const Reader& top, const ModelConfig& config) {
  constexpr int64_t kDefaultWindow = 4096;
  const bool given = root.contains("sliding_window");
  int64_t window = 0;
  if (!given || !root["sliding_window"].is_null()) {
    AC_ASSIGN_OR_RETURN(window, top.integer("sliding_window", kDefaultWindow));
  }
  const bool covers = window <= 0 || window >= config.max_position_embeddings;
  const std::string why = "with sliding_window " + std::to_string(window) + (given ? "" : " (transformers' default)") +
                          ", shorter than the context of " + std::to_string(config.max_position_embeddings) +
                          ": sliding-window attention is not supported";
  if (const json* types = top.find("layer_types")) {
    if (!types->is_array()) return top.refuse("layer_types", "must be a list of strings, got " + Reader::shown(*types));
    for (const json& type : *types) {
      if (type == "full_attention") continue;
      if (type != "sliding_attention")
        return top.refuse("layer_types", "lists " + Reader::shown(type) + " (supported: full_attention, sliding_attention)", ErrorCode::kUnsupported);
      if (!covers) return top.refuse("layer_types", "lists sliding_attention " + why, ErrorCode::kUnsupported);
    }
    return Status::ok();
  }
  AC_ASSIGN_OR_RETURN(const bool sliding, top.boolean("use_sliding_window", false));
  if (!sliding || covers) return Status::ok();
  if (top.find("max_window_layers")) {
    AC_ASSIGN_OR_RETURN(const int64_t first_sliding_layer, top.integer("max_window_layers"));
    if (first_sliding_layer >= config.num_layers) return Status::ok();  // no layer slides
  }
  return top.refuse("use_sliding_window", "is true " + why, ErrorCode::kUnsupported);
}

Expected<ir::DType> parse_torch_dtype(const Reader& top) {
  std::optional<std::string> name;
  for (const char* key : {"dtype", "torch_dtype"}) {
    AC_ASSIGN_OR_RETURN(name, top.string(key));
    if (name) break;
  }
  if (!name || *name == "bfloat16") return ir::DType::kBF16;
  if (*name == "float16" || *name == "half") return ir::DType::kF16;
  if (*name == "float32" || *name == "float") return ir::DType::kF32;
  return top.refuse("torch_dtype", "'" + *name + "' is not supported (float16, bfloat16, float32)", ErrorCode::kUnsupported);
}

// bos_token_id: an id or null; eos_token_id: an id, a list of ids, or null.
Status parse_special_ids(const Reader& top, ModelConfig& config) {
  if (const json* bos = top.find("bos_token_id")) {
    if (!bos->is_number_integer()) return top.refuse("bos_token_id", "must be a token id, got " + Reader::shown(*bos));
    config.bos_token_id = bos->get<int64_t>();
  }
  if (const json* eos = top.find("eos_token_id")) {
    const json list = eos->is_array() ? *eos : json::array({*eos});
    for (const json& id : list) {
      if (!id.is_number_integer()) return top.refuse("eos_token_id", "must be a token id or a list of them, got " + Reader::shown(*eos));
      config.eos_token_ids.push_back(id.get<int64_t>());
    }
  }
  return Status::ok();
}

}  // namespace

std::string config_key_name(const ConfigKeyNames& names, const std::string& key) {
  auto it = names.find(key);
  return it != names.end() ? it->second : "key '" + key + "'";
}

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = {"llama", "qwen2", "qwen3"};
  return types;
}

Expected<ModelConfig> parse_hf_config(const nlohmann::json& json, const std::string& source, const ConfigKeyNames& names) {
  if (!json.is_object()) return error(ErrorCode::kParse, source + ": config must be a JSON object");
  const Reader top(json, source, names);
  ModelConfig config;
  config.raw = json;
  AC_ASSIGN_OR_RETURN(const std::optional<std::string> model_type, top.string("model_type"));
  if (!model_type) return top.missing("model_type");
  config.model_type = *model_type;
  const auto& types = supported_model_types();
  if (std::find(types.begin(), types.end(), config.model_type) == types.end())
    return error(ErrorCode::kUnsupported, source + ": model_type '" + config.model_type +
                                              "' is not supported (supported: llama, qwen2, qwen3)");
  if (const nlohmann::json* quantization = top.find("quantization_config")) {
    const nlohmann::json* method = quantization->is_object() && quantization->contains("quant_method") ? &(*quantization)["quant_method"] : nullptr;
    return top.refuse("quantization_config",
                      "describes weights quantized with " + (method ? Reader::shown(*method) : std::string("an unnamed method")) +
                          " (GPTQ, AWQ and other quantized checkpoints are not supported; use the unquantized checkpoint or a GGUF file)",
                      ErrorCode::kUnsupported);
  }

  AC_ASSIGN_OR_RETURN(config.hidden_size, top.integer("hidden_size"));
  AC_ASSIGN_OR_RETURN(config.intermediate_size, top.integer("intermediate_size"));
  AC_ASSIGN_OR_RETURN(config.num_layers, top.integer("num_hidden_layers"));
  AC_ASSIGN_OR_RETURN(config.num_heads, top.integer("num_attention_heads"));
  AC_ASSIGN_OR_RETURN(config.num_kv_heads, top.integer("num_key_value_heads", config.num_heads));
  AC_ASSIGN_OR_RETURN(config.vocab_size, top.integer("vocab_size"));
  AC_ASSIGN_OR_RETURN(config.max_position_embeddings, top.integer("max_position_embeddings", 2048));
  for (auto [key, value] : {std::pair{"hidden_size", config.hidden_size}, {"intermediate_size", config.intermediate_size},
                            {"num_hidden_layers", config.num_layers}, {"num_attention_heads", config.num_heads},
                            {"num_key_value_heads", config.num_kv_heads}, {"vocab_size", config.vocab_size},
                            {"max_position_embeddings", config.max_position_embeddings}})
    if (value <= 0) return top.refuse(key, "must be positive, got " + std::to_string(value));
  if (config.num_heads % config.num_kv_heads != 0)
    return top.refuse("num_key_value_heads", "(" + std::to_string(config.num_kv_heads) + ") must divide num_attention_heads (" +
                                                 std::to_string(config.num_heads) + ")");
  if (config.hidden_size % config.num_heads != 0 && !top.find("head_dim"))
    return top.refuse("head_dim", "is absent and hidden_size is not a multiple of num_attention_heads");
  AC_ASSIGN_OR_RETURN(config.head_dim, top.integer("head_dim", config.hidden_size / config.num_heads));
  if (config.head_dim <= 0 || config.head_dim % 2 != 0)
    return top.refuse("head_dim", "must be positive and even, got " + std::to_string(config.head_dim));
  AC_ASSIGN_OR_RETURN(config.rms_norm_eps, top.number("rms_norm_eps", 1e-6));
  AC_ASSIGN_OR_RETURN(config.initializer_range, top.number("initializer_range", 0.02));
  AC_TRY(parse_rope(json, top, source, names, config));
  AC_TRY(check_sliding_window(json, top, config));
  AC_ASSIGN_OR_RETURN(config.tie_word_embeddings, top.boolean("tie_word_embeddings", false));
  AC_ASSIGN_OR_RETURN(config.dtype, parse_torch_dtype(top));

  AC_ASSIGN_OR_RETURN(const std::optional<std::string> act, top.string("hidden_act"));
  if (act && *act != "silu") return top.refuse("hidden_act", "'" + *act + "' is not supported (silu)", ErrorCode::kUnsupported);

  AC_ASSIGN_OR_RETURN(bool attention_bias, top.boolean("attention_bias", false));
  if (config.model_type == "qwen2") {
    config.qkv_bias = true;  // Qwen2 always carries q/k/v biases and none on o_proj
  } else {
    config.qkv_bias = attention_bias;
    config.o_bias = attention_bias;
  }
  if (config.model_type == "llama") {
    AC_ASSIGN_OR_RETURN(config.mlp_bias, top.boolean("mlp_bias", false));
  }
  config.qk_norm = config.model_type == "qwen3";

  AC_TRY(parse_special_ids(top, config));
  AC_TRY(check_config_invariants(config, source, names));
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
