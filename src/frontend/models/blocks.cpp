// Shared decoder blocks: the Hugging Face Llama/Qwen computation written once.
#include "frontend/models/blocks.h"

#include <cmath>

namespace agentcompile::frontend::blocks {

using ir::Dim;
using ir::OpKind;
using ir::ValueId;

namespace {
std::string layer_prefix(int layer) { return "model.layers." + std::to_string(layer) + "."; }

void add_param(ir::Module& module, const std::string& name, ir::DType dtype, std::vector<int64_t> sizes) {
  ir::Shape shape;
  for (int64_t size : sizes) shape.push_back(Dim::of(size));
  module.params.push_back(ir::ParamDecl{name, ir::TensorType{dtype, shape}});
}

ir::Attrs rope_attrs(const ModelConfig& config) {
  ir::Attrs attrs{{"theta", config.rope_theta}, {"scaling", config.rope_scaling.type}};
  if (config.rope_scaling.type == "llama3") {
    attrs["factor"] = config.rope_scaling.factor;
    attrs["low_freq_factor"] = config.rope_scaling.low_freq_factor;
    attrs["high_freq_factor"] = config.rope_scaling.high_freq_factor;
    attrs["original_max_position"] = config.rope_scaling.original_max_position;
  }
  return attrs;
}
}  // namespace

void declare_params(ir::Module& module, const ModelConfig& c, const ArchTraits& traits) {
  const ir::DType dt = c.dtype;
  const int64_t q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim;
  add_param(module, "model.embed_tokens.weight", dt, {c.vocab_size, c.hidden_size});
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const std::string p = layer_prefix(layer);
    add_param(module, p + "input_layernorm.weight", dt, {c.hidden_size});
    for (auto [proj, rows] : {std::pair{"q_proj", q_dim}, {"k_proj", kv_dim}, {"v_proj", kv_dim}}) {
      add_param(module, p + "self_attn." + proj + ".weight", dt, {rows, c.hidden_size});
      if (traits.qkv_bias) add_param(module, p + "self_attn." + proj + ".bias", dt, {rows});
    }
    add_param(module, p + "self_attn.o_proj.weight", dt, {c.hidden_size, q_dim});
    if (traits.o_bias) add_param(module, p + "self_attn.o_proj.bias", dt, {c.hidden_size});
    if (traits.qk_norm) {
      add_param(module, p + "self_attn.q_norm.weight", dt, {c.head_dim});
      add_param(module, p + "self_attn.k_norm.weight", dt, {c.head_dim});
    }
    add_param(module, p + "post_attention_layernorm.weight", dt, {c.hidden_size});
    for (auto [proj, rows, cols] : {std::tuple{"gate_proj", c.intermediate_size, c.hidden_size},
                                    {"up_proj", c.intermediate_size, c.hidden_size},
                                    {"down_proj", c.hidden_size, c.intermediate_size}}) {
      add_param(module, p + "mlp." + proj + ".weight", dt, {rows, cols});
      if (traits.mlp_bias) add_param(module, p + "mlp." + proj + ".bias", dt, {rows});
    }
  }
  add_param(module, "model.norm.weight", dt, {c.hidden_size});
  if (!c.tie_word_embeddings) add_param(module, "lm_head.weight", dt, {c.vocab_size, c.hidden_size});
}

void declare_states(ir::Module& module, const ModelConfig& c) {
  const ir::Shape shape{Dim::L(), Dim::of(c.num_kv_heads), Dim::of(c.head_dim)};
  for (int layer = 0; layer < c.num_layers; ++layer)
    for (const char* which : {"k", "v"})
      module.states.push_back(
          ir::StateDecl{"kv." + std::to_string(layer) + "." + which, ir::TensorType{c.dtype, shape}});
}

ValueId build_norm(ir::FunctionBuilder& b, ValueId x, const std::string& weight_name, double eps) {
  return b.op(OpKind::kRmsNorm, {x, b.weight(weight_name)}, {{"eps", eps}});
}

ValueId build_linear(ir::FunctionBuilder& b, ValueId x, const std::string& prefix, bool bias) {
  std::vector<ValueId> operands{x, b.weight(prefix + ".weight")};
  if (bias) operands.push_back(b.weight(prefix + ".bias"));
  return b.op(OpKind::kLinear, operands);
}

ValueId build_attention(ir::FunctionBuilder& b, const ModelConfig& c, const ArchTraits& traits, int layer,
                        ValueId x, ValueId pos) {
  const std::string p = layer_prefix(layer) + "self_attn.";
  const Dim tokens = b.type(x).shape[0];
  const auto heads = [&](int64_t n) { return std::vector<Dim>{tokens, Dim::of(n), Dim::of(c.head_dim)}; };

  ValueId q = b.op(OpKind::kReshape, {build_linear(b, x, p + "q_proj", traits.qkv_bias)}, {{"shape", heads(c.num_heads)}});     // [T, NH, D]
  ValueId k = b.op(OpKind::kReshape, {build_linear(b, x, p + "k_proj", traits.qkv_bias)}, {{"shape", heads(c.num_kv_heads)}});  // [T, KV, D]
  ValueId v = b.op(OpKind::kReshape, {build_linear(b, x, p + "v_proj", traits.qkv_bias)}, {{"shape", heads(c.num_kv_heads)}});  // [T, KV, D]
  if (traits.qk_norm) {
    q = build_norm(b, q, p + "q_norm.weight", c.rms_norm_eps);
    k = build_norm(b, k, p + "k_norm.weight", c.rms_norm_eps);
  }
  q = b.op(OpKind::kRope, {q, pos}, rope_attrs(c));
  k = b.op(OpKind::kRope, {k, pos}, rope_attrs(c));
  const std::string state = "kv." + std::to_string(layer) + ".";
  ValueId k_cache = b.op(OpKind::kKvAppend, {k, pos}, {{"state", state + "k"}});  // [L, KV, D]
  ValueId v_cache = b.op(OpKind::kKvAppend, {v, pos}, {{"state", state + "v"}});  // [L, KV, D]
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  ValueId attn = b.op(OpKind::kAttention, {q, k_cache, v_cache, pos}, {{"scale", scale}});  // [T, NH, D]
  attn = b.op(OpKind::kReshape, {attn}, {{"shape", std::vector<Dim>{tokens, Dim::of(c.num_heads * c.head_dim)}}});
  return build_linear(b, attn, p + "o_proj", traits.o_bias);  // [T, H]
}

ValueId build_mlp(ir::FunctionBuilder& b, const ModelConfig& c, const ArchTraits& traits, int layer, ValueId x) {
  const std::string p = layer_prefix(layer) + "mlp.";
  ValueId gate = build_linear(b, x, p + "gate_proj", traits.mlp_bias);  // [T, I]
  ValueId up = build_linear(b, x, p + "up_proj", traits.mlp_bias);      // [T, I]
  ValueId act = b.op(OpKind::kMul, {b.op(OpKind::kSilu, {gate}), up});
  return build_linear(b, act, p + "down_proj", traits.mlp_bias);  // [T, H]
}

Status build_decoder_function(ir::Module& module, const ModelConfig& c, const ArchTraits& traits,
                              const std::string& name, Dim tokens_dim, bool all_logits) {
  ir::FunctionBuilder b(module, name);
  ValueId tokens = b.arg("tokens", ir::TensorType{ir::DType::kI32, {tokens_dim}});
  ValueId pos = b.arg("pos", ir::TensorType{ir::DType::kI32, {}});
  ValueId h = b.op(OpKind::kEmbedding, {b.weight("model.embed_tokens.weight"), tokens});  // [T, H]
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const std::string p = layer_prefix(layer);
    ValueId normed = build_norm(b, h, p + "input_layernorm.weight", c.rms_norm_eps);
    h = b.op(OpKind::kAdd, {h, build_attention(b, c, traits, layer, normed, pos)});
    normed = build_norm(b, h, p + "post_attention_layernorm.weight", c.rms_norm_eps);
    h = b.op(OpKind::kAdd, {h, build_mlp(b, c, traits, layer, normed)});
  }
  if (!all_logits && !(tokens_dim.is_static() && tokens_dim.value == 1))
    h = b.op(OpKind::kSlice, {h}, {{"axis", int64_t{0}}, {"start", int64_t{-1}}, {"length", int64_t{1}}});  // [1, H]
  h = build_norm(b, h, "model.norm.weight", c.rms_norm_eps);
  const std::string head = c.tie_word_embeddings ? "model.embed_tokens" : "lm_head";
  ValueId logits = b.op(OpKind::kLinear, {h, b.weight(head + ".weight")});  // [T or 1, V]
  b.result(b.op(OpKind::kCast, {logits}, {{"dtype", std::string("f32")}}));
  return b.finish();
}

}  // namespace agentcompile::frontend::blocks
