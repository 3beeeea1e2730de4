// GGUF metadata -> ModelConfig (through an equivalent HF config.json) and the HF-named GGUF WeightStore.
//
// llama.cpp's converter reorders the rows of llama's q_proj and k_proj (weights and biases) so that each
// head's rotary pairs are adjacent (interleaved RoPE): per head of D rows it writes HF row s·D/2 + i at
// row 2·i + s. Hugging Face applies rotate-half RoPE to the original order, so the store undoes the
// reordering on read, with the query head count for q and the key/value head count for k, as
// transformers' GGUF loader does. qwen2/qwen3 are converted unpermuted (NeoX RoPE is rotate-half).
#include "frontend/gguf_model.h"

#include <charconv>
#include <cstring>

#include "ir/quant.h"

namespace agentcompile::frontend {

namespace {

// Metadata lookups that name the source and the GGUF key in every error.
class Metadata {
 public:
  Metadata(const GgufFile& gguf, const std::string& source) : gguf_(gguf), source_(source) {}

  Expected<int64_t> positive_int(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    const GgufValue* value = gguf_.find(key);
    if (!value) {
      if (fallback) return *fallback;
      return error(ErrorCode::kNotFound, source_ + ": missing GGUF metadata key '" + key + "'");
    }
    if (value->as_array())
      return error(ErrorCode::kUnsupported, source_ + ": GGUF metadata key '" + key +
                                                "' is a per-layer array; only one value for all layers is supported");
    const auto number = value->as_int();
    if (!number || *number <= 0)
      return error(ErrorCode::kParse, source_ + ": GGUF metadata key '" + key + "' must be a positive integer, got " +
                                          value->to_string());
    return *number;
  }

  // f32 values are widened through their shortest decimal form, which recovers the decimal the converter
  // started from (1e-05 rather than 9.99999974738e-06), as config.json would say.
  Expected<double> positive_number(const std::string& key, std::optional<double> fallback) const {
    const GgufValue* value = gguf_.find(key);
    if (!value) {
      if (fallback) return *fallback;
      return error(ErrorCode::kNotFound, source_ + ": missing GGUF metadata key '" + key + "'");
    }
    auto number = value->as_float();
    if (!number || !(*number > 0))
      return error(ErrorCode::kParse, source_ + ": GGUF metadata key '" + key + "' must be a positive number, got " +
                                          value->to_string());
    if (value->type == GgufType::kF32) {
      char buffer[32];
      const auto printed = std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(*number));
      std::from_chars(buffer, printed.ptr, *number);
    }
    return *number;
  }

  const std::string* string(const std::string& key) const {
    const GgufValue* value = gguf_.find(key);
    return value ? value->as_string() : nullptr;
  }

 private:
  const GgufFile& gguf_;
  const std::string& source_;
};

const char* hf_architecture_class(const std::string& arch) {
  if (arch == "llama") return "LlamaForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  return "Qwen3ForCausalLM";
}

// Which of q/k/v/o and the MLP carry biases, read from layer 0 (converters treat all layers alike).
struct Biases {
  bool qkv = false;
  bool o = false;
  bool mlp = false;
};

Expected<Biases> read_biases(const GgufFile& gguf, const std::string& arch, const std::string& source) {
  auto has = [&](const char* name) { return gguf.find_tensor(std::string("blk.0.") + name + ".bias") != nullptr; };
  Biases biases{has("attn_q"), has("attn_output"), has("ffn_gate") || has("ffn_up") || has("ffn_down")};
  if (has("attn_k") != biases.qkv || has("attn_v") != biases.qkv)
    return error(ErrorCode::kUnsupported, source + ": blk.0 has biases on some but not all of attn_q/attn_k/attn_v");
  if (arch == "qwen2") {
    if (!biases.qkv)
      return error(ErrorCode::kMismatch, source + ": qwen2 always has q/k/v biases but tensor 'blk.0.attn_q.bias' is missing");
    if (biases.o) return error(ErrorCode::kUnsupported, source + ": qwen2 with an attn_output bias is not supported");
  } else if (biases.o != biases.qkv) {
    return error(ErrorCode::kUnsupported, source + ": " + arch +
                                              " carries attention biases on all of q/k/v/o or none (attention_bias); "
                                              "this file has them on " + (biases.qkv ? "q/k/v only" : "attn_output only"));
  }
  if (biases.mlp && arch != "llama")
    return error(ErrorCode::kUnsupported, source + ": " + arch + " with MLP biases is not supported");
  return biases;
}

}  // namespace

Expected<ModelConfig> gguf_model_config(const GgufFile& gguf, const std::string& source) {
  const Metadata meta(gguf, source);
  const std::string* arch_name = meta.string("general.architecture");
  if (!arch_name) return error(ErrorCode::kNotFound, source + ": missing GGUF metadata key 'general.architecture'");
  const std::string arch = *arch_name;
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3")
    return error(ErrorCode::kUnsupported,
                 source + ": GGUF architecture '" + arch + "' is not supported (supported: llama, qwen2, qwen3)");
  const std::string p = arch + ".";

  AC_ASSIGN_OR_RETURN(const int64_t context, meta.positive_int(p + "context_length"));
  AC_ASSIGN_OR_RETURN(const int64_t hidden, meta.positive_int(p + "embedding_length"));
  AC_ASSIGN_OR_RETURN(const int64_t layers, meta.positive_int(p + "block_count"));
  AC_ASSIGN_OR_RETURN(const int64_t ffn, meta.positive_int(p + "feed_forward_length"));
  AC_ASSIGN_OR_RETURN(const int64_t heads, meta.positive_int(p + "attention.head_count"));
  AC_ASSIGN_OR_RETURN(const int64_t kv_heads, meta.positive_int(p + "attention.head_count_kv", heads));
  if (!gguf.find(p + "attention.key_length") && hidden % heads != 0)
    return error(ErrorCode::kParse, source + ": '" + p + "attention.key_length' is absent and " + p +
                                        "embedding_length is not a multiple of " + p + "attention.head_count");
  AC_ASSIGN_OR_RETURN(const int64_t head_dim, meta.positive_int(p + "attention.key_length", hidden / heads));
  AC_ASSIGN_OR_RETURN(const int64_t value_dim, meta.positive_int(p + "attention.value_length", head_dim));
  if (value_dim != head_dim)
    return error(ErrorCode::kUnsupported, source + ": '" + p + "attention.value_length' (" + std::to_string(value_dim) +
                                              ") differs from the key length (" + std::to_string(head_dim) + ")");
  AC_ASSIGN_OR_RETURN(const int64_t rotary_dim, meta.positive_int(p + "rope.dimension_count", head_dim));
  if (rotary_dim != head_dim)
    return error(ErrorCode::kUnsupported, source + ": partial RoPE ('" + p + "rope.dimension_count' = " +
                                              std::to_string(rotary_dim) + ", head dim " + std::to_string(head_dim) +
                                              ") is not supported");
  AC_ASSIGN_OR_RETURN(const double theta, meta.positive_number(p + "rope.freq_base", 10000.0));
  AC_ASSIGN_OR_RETURN(const double eps, meta.positive_number(p + "attention.layer_norm_rms_epsilon", std::nullopt));

  if (gguf.find_tensor("rope_freqs.weight"))
    return error(ErrorCode::kUnsupported, source + ": tensor 'rope_freqs.weight' (llama3-style RoPE scaling) is not supported yet");
  if (const GgufValue* scaling = gguf.find(p + "rope.scaling.type")) {
    const std::string* type = scaling->as_string();
    if (!type || *type != "none")
      return error(ErrorCode::kUnsupported, source + ": GGUF metadata key '" + p + "rope.scaling.type' = " +
                                                scaling->to_string() + ": RoPE scaling is not supported yet");
  }

  const GgufTensorInfo* embed = gguf.find_tensor("token_embd.weight");
  if (!embed) return error(ErrorCode::kNotFound, source + ": missing tensor 'token_embd.weight'");
  if (embed->dims.size() != 2 || embed->dims[0] != hidden)
    return error(ErrorCode::kMismatch, source + ": tensor 'token_embd.weight' must have dims [" + std::to_string(hidden) +
                                           ", vocab] (" + p + "embedding_length innermost)");
  const int64_t vocab = embed->dims[1];
  AC_ASSIGN_OR_RETURN(const Biases biases, read_biases(gguf, arch, source));

  nlohmann::json raw = {
      {"architectures", nlohmann::json::array({hf_architecture_class(arch)})},
      {"model_type", arch},
      {"hidden_size", hidden},
      {"intermediate_size", ffn},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kv_heads},
      {"head_dim", head_dim},
      {"vocab_size", vocab},
      {"max_position_embeddings", context},
      {"rms_norm_eps", eps},
      {"rope_theta", theta},
      {"tie_word_embeddings", gguf.find_tensor("output.weight") == nullptr},
      {"hidden_act", "silu"},
      {"torch_dtype", "float16"},
  };
  if (arch != "qwen2") raw["attention_bias"] = biases.qkv;
  if (arch == "llama") raw["mlp_bias"] = biases.mlp;
  for (auto [gguf_key, hf_key] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                                  {"tokenizer.ggml.eos_token_id", "eos_token_id"}}) {
    const GgufValue* value = gguf.find(gguf_key);
    if (!value) continue;
    const auto id = value->as_int();
    if (!id || *id < 0 || *id >= vocab)
      return error(ErrorCode::kParse, source + ": GGUF metadata key '" + std::string(gguf_key) + "' = " +
                                          value->to_string() + " is not a token id below the vocab size " +
                                          std::to_string(vocab));
    raw[hf_key] = *id;
  }
  // Errors about the equivalent config.json name the GGUF keys the values came from.
  ConfigKeyNames names;
  for (auto [hf_key, gguf_key] : {std::pair{"hidden_size", "embedding_length"}, {"intermediate_size", "feed_forward_length"},
                                  {"num_hidden_layers", "block_count"}, {"num_attention_heads", "attention.head_count"},
                                  {"num_key_value_heads", "attention.head_count_kv"}, {"head_dim", "attention.key_length"},
                                  {"max_position_embeddings", "context_length"}, {"rms_norm_eps", "attention.layer_norm_rms_epsilon"},
                                  {"rope_theta", "rope.freq_base"}})
    names[hf_key] = "GGUF metadata key '" + p + gguf_key + "'";
  names["bos_token_id"] = "GGUF metadata key 'tokenizer.ggml.bos_token_id'";
  names["eos_token_id"] = "GGUF metadata key 'tokenizer.ggml.eos_token_id'";
  names["vocab_size"] = "the vocabulary size (dims[1] of tensor 'token_embd.weight')";
  return parse_hf_config(raw, source, names);
}

std::string gguf_to_hf_name(std::string_view name) {
  static const std::pair<std::string_view, std::string_view> kGlobal[] = {
      {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
  static const std::pair<std::string_view, std::string_view> kLayer[] = {
      {"attn_norm", "input_layernorm"},      {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},        {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"},   {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"},   {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},         {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::string(name);
  const std::string_view suffix = name.substr(dot);  // ".weight" or ".bias"
  std::string_view stem = name.substr(0, dot);
  if (suffix != ".weight" && suffix != ".bias") return std::string(name);
  for (auto [gguf, hf] : kGlobal)
    if (stem == gguf) return std::string(hf) + std::string(suffix);
  if (!stem.starts_with("blk.")) return std::string(name);
  stem.remove_prefix(4);
  const size_t digits = stem.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos || stem[digits] != '.') return std::string(name);
  const std::string_view layer = stem.substr(0, digits);
  const std::string_view part = stem.substr(digits + 1);
  for (auto [gguf, hf] : kLayer)
    if (part == gguf) return "model.layers." + std::string(layer) + "." + std::string(hf) + std::string(suffix);
  return std::string(name);
}

template <typename T>
void unpermute_llama_rows(std::vector<T>& data, int64_t rows, int64_t heads) {
  const auto row_len = static_cast<size_t>(static_cast<int64_t>(data.size()) / rows);
  const int64_t head_rows = rows / heads;
  const int64_t half = head_rows / 2;
  std::vector<T> out(data.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t from = h * head_rows + 2 * i + s;    // interleaved (GGUF)
        const int64_t to = h * head_rows + s * half + i;   // rotate-half (HF)
        std::memcpy(&out[static_cast<size_t>(to) * row_len], &data[static_cast<size_t>(from) * row_len],
                    row_len * sizeof(T));
      }
  data.swap(out);
}
template void unpermute_llama_rows<float>(std::vector<float>&, int64_t, int64_t);
template void unpermute_llama_rows<uint8_t>(std::vector<uint8_t>&, int64_t, int64_t);

std::string GgufStore::tensor_label(const std::string& name) const {
  const GgufTensorInfo* tensor = gguf_tensor(name);
  return tensor && tensor->name != name ? "'" + name + "' (GGUF tensor '" + tensor->name + "')" : "'" + name + "'";
}

const GgufTensorInfo* GgufStore::gguf_tensor(const std::string& hf_name) const {
  auto it = entries_.find(hf_name);
  return it == entries_.end() ? nullptr : it->second.tensor;
}

Status GgufStore::read_f32(const std::string& name, std::vector<float>& out) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return error(ErrorCode::kNotFound, source() + ": no tensor '" + name + "'");
  const GgufTensorInfo& tensor = *it->second.tensor;
  out.resize(static_cast<size_t>(tensor.elements));
  const Status status = ir::dequantize(tensor.dtype, file_->bytes(tensor), tensor.elements, out.data());
  if (!status.is_ok()) return status.with_context(source() + ": tensor '" + tensor.name + "': ");
  if (it->second.rope_heads > 0) {
    const int64_t rows = tensor.dims.back();  // outermost ggml dim = HF rows (a bias has only this one)
    unpermute_llama_rows(out, rows, it->second.rope_heads);
  }
  return Status::ok();
}

Status GgufStore::read_stored(const std::string& name, ir::DType format, std::vector<uint8_t>& out) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return error(ErrorCode::kNotFound, source() + ": no tensor '" + name + "'");
  const GgufTensorInfo& tensor = *it->second.tensor;
  if (tensor.dtype != format)
    return error(ErrorCode::kMismatch, source() + ": tensor '" + tensor.name + "' is stored as " + std::string(ir::dtype_name(tensor.dtype)) +
                                           ", not " + std::string(ir::dtype_name(format)));
  const uint8_t* bytes = file_->bytes(tensor);
  out.assign(bytes, bytes + tensor.bytes);
  if (it->second.rope_heads > 0) unpermute_llama_rows(out, tensor.dims.back(), it->second.rope_heads);
  return Status::ok();
}

Expected<std::unique_ptr<GgufStore>> open_gguf_checkpoint(const std::filesystem::path& path) {
  AC_ASSIGN_OR_RETURN(auto file, GgufModelFile::open(path));
  const GgufFile& gguf = file->gguf();
  const std::string source = path.string();
  const GgufValue* arch = gguf.find("general.architecture");
  const bool llama = arch && arch->as_string() && *arch->as_string() == "llama";
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  if (llama) {  // the row permutation cannot be undone without the head counts
    const Metadata meta(gguf, source);
    AC_ASSIGN_OR_RETURN(q_heads, meta.positive_int("llama.attention.head_count"));
    AC_ASSIGN_OR_RETURN(kv_heads, meta.positive_int("llama.attention.head_count_kv", q_heads));
  }

  std::unique_ptr<GgufStore> store(new GgufStore());
  store->tensors_.reserve(gguf.tensors.size());
  for (const GgufTensorInfo& tensor : gguf.tensors) {
    TensorInfo info{gguf_to_hf_name(tensor.name), tensor.dtype,
                    std::vector<int64_t>(tensor.dims.rbegin(), tensor.dims.rend())};
    int64_t rope_heads = 0;
    const std::string& hf = info.name;
    if (llama && hf.starts_with("model.layers.")) {
      if (hf.ends_with(".self_attn.q_proj.weight") || hf.ends_with(".self_attn.q_proj.bias")) rope_heads = q_heads;
      if (hf.ends_with(".self_attn.k_proj.weight") || hf.ends_with(".self_attn.k_proj.bias")) rope_heads = kv_heads;
    }
    if (rope_heads > 0) {
      const int64_t rows = tensor.dims.empty() ? 0 : tensor.dims.back();
      if (tensor.dims.empty() || tensor.dims.size() > 2 || rows % (2 * rope_heads) != 0)
        return error(ErrorCode::kMismatch, source + ": tensor '" + tensor.name + "' has " + std::to_string(rows) +
                                               " rows, which do not split into " + std::to_string(rope_heads) +
                                               " heads of an even size, so llama.cpp's q/k row permutation "
                                               "cannot be undone");
    }
    if (!store->entries_.emplace(hf, GgufStore::Entry{&tensor, rope_heads}).second)
      return error(ErrorCode::kParse, source + ": tensors map to the same Hugging Face name '" + hf + "'");
    store->tensors_.push_back(std::move(info));
  }
  store->file_ = std::move(file);
  return store;
}

}  // namespace agentcompile::frontend
