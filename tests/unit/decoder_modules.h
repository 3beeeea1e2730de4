// Decoder layers of the architectures with no graph builder (Gemma-3 1B, Phi-3-mini-4k, OLMo-2 1B) at
// their published sizes, written by hand in the IR's text form, in the semantic form the recognizer
// raises captured graphs to (analysis/recognize): rmsnorm, rope, kv_append, attention, linear,
// silu/gelu, mul, add. Each module has a `decode` (one token) and a `prefill` (T tokens) function
// over the residual stream of its layers; what they exercise:
//   gemma3  two layers: local (sliding window 512, RoPE theta 10000) and global (theta 1e6); head dim
//           256, 4 query heads over 1 kv head; every norm weight f32 (the recognizer's hoisted 1 + w)
//           while activations are 16-bit; per-head QK-norm; pre/post "sandwich" norms;
//           gelu_tanh(gate) * up, applied in f32 between casts in the global layer.
//   gemma3_raised  the same layers as analysis/recognize raises a captured Gemma-3 today: every norm
//           computed in f32 between casts (cast(x) -> rmsnorm(x32, w32) -> cast back), the decode
//           query normed as [H, 1, D] (its head axis first), the single kv head's key normed as the
//           [T, D] projection before its head reshape.
//   phi3    head dim 96, 32 heads (no GQA), sliding window 2047, SiLU MLP, residual adds in the
//           matmul epilogues; `phi3_table` has the same layer with its RoPE given as an inv_freq table
//           and a cos/sin scale (the form the recognizer emits when no parametric form fits).
//   olmo2   RMSNorm over the full q and k projections before the head reshape, post-attention and
//           post-feedforward norms added to the residual, theta 500000.
// Shared by tests/unit/decoder_families_test.cpp (regions, matching, NVRTC) and
// tests/gpu/decoder_admission_test.cpp (every kernel variant against the interpreter).
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/text.h"

namespace agentcompile::testing {

struct DecoderModule {
  std::string name;
  std::string text;  // IR text form
};

// One layer's IR lines, numbered from %<prefix>; `x` is the residual stream value, `rows` "1" or "T".
class LayerWriter {
 public:
  LayerWriter(std::ostringstream& out, std::string dt, std::string rows) : out_(out), dt_(std::move(dt)), rows_(std::move(rows)) {}

  // Emits `%name = text : type` and returns "%name".
  std::string emit(const std::string& name, const std::string& text, const std::string& type) {
    out_ << "    %" << name << " = " << text << " : " << type << "\n";
    return "%" + name;
  }
  std::string weight(const std::string& name, const std::string& type) {
    return emit(name + "_w", "weight {name = \"" + name + "\"}", type);
  }
  // [rows, n] of the activation dtype, and [rows, a, b].
  std::string act(int64_t n) const { return dt_ + "[" + rows_ + ", " + std::to_string(n) + "]"; }
  std::string act(int64_t a, int64_t b) const { return dt_ + "[" + rows_ + ", " + std::to_string(a) + ", " + std::to_string(b) + "]"; }
  const std::string& dt() const { return dt_; }
  const std::string& rows() const { return rows_; }

 private:
  std::ostringstream& out_;
  std::string dt_, rows_;
};

struct LayerShape {
  int64_t hidden, heads, kv_heads, head_dim, inter;
  double eps;
  std::string rope_attrs;     // e.g. "theta = 10000.0"
  int64_t window = 0;         // 0: global attention
  bool norm_f32 = false;      // every norm weight f32 (Gemma)
  bool qk_norm_per_head = false;
  bool qk_norm_whole = false;  // OLMo-2
  bool sandwich = false;       // post-attention and post-feedforward norms before the residual add
  bool pre_norms = true;       // input and pre-feedforward norms (OLMo-2 has none)
  std::string act = "silu";    // "silu", "gelu_tanh", "gelu_tanh_f32" (cast to f32 around it)
  bool norms_in_f32 = false;   // cast(x -> f32) -> rmsnorm -> cast back, the layouts of gemma3_raised
};

inline std::string params_of(const LayerShape& s, int layer, const std::string& dt) {
  const std::string L = "l" + std::to_string(layer) + ".";
  const std::string nt = s.norm_f32 ? "f32" : dt;
  auto mat = [&](int64_t n, int64_t k) { return dt + "[" + std::to_string(n) + ", " + std::to_string(k) + "]"; };
  auto vec = [&](int64_t n) { return nt + "[" + std::to_string(n) + "]"; };
  std::ostringstream p;
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  if (s.pre_norms) p << "  param @" << L << "input_norm.weight : " << vec(s.hidden) << "\n";
  p << "  param @" << L << "q_proj.weight : " << mat(q, s.hidden) << "\n"
    << "  param @" << L << "k_proj.weight : " << mat(kv, s.hidden) << "\n"
    << "  param @" << L << "v_proj.weight : " << mat(kv, s.hidden) << "\n";
  if (s.qk_norm_per_head)
    p << "  param @" << L << "q_norm.weight : " << vec(s.head_dim) << "\n  param @" << L << "k_norm.weight : " << vec(s.head_dim) << "\n";
  if (s.qk_norm_whole) p << "  param @" << L << "q_norm.weight : " << vec(q) << "\n  param @" << L << "k_norm.weight : " << vec(kv) << "\n";
  p << "  param @" << L << "o_proj.weight : " << mat(s.hidden, q) << "\n";
  if (s.sandwich) p << "  param @" << L << "post_attention_norm.weight : " << vec(s.hidden) << "\n";
  if (s.pre_norms) p << "  param @" << L << "pre_feedforward_norm.weight : " << vec(s.hidden) << "\n";
  p << "  param @" << L << "gate_proj.weight : " << mat(s.inter, s.hidden) << "\n"
    << "  param @" << L << "up_proj.weight : " << mat(s.inter, s.hidden) << "\n"
    << "  param @" << L << "down_proj.weight : " << mat(s.hidden, s.inter) << "\n";
  if (s.sandwich) p << "  param @" << L << "post_feedforward_norm.weight : " << vec(s.hidden) << "\n";
  p << "  state @kv." << layer << ".k : " << dt << "[L, " << s.kv_heads << ", " << s.head_dim << "]\n"
    << "  state @kv." << layer << ".v : " << dt << "[L, " << s.kv_heads << ", " << s.head_dim << "]\n";
  return p.str();
}

// The layer's nodes; returns the new residual stream value.
inline std::string layer_body(LayerWriter& w, const LayerShape& s, int layer, const std::string& x) {
  const std::string L = "l" + std::to_string(layer) + ".", n = "l" + std::to_string(layer) + "_";
  const std::string nt = s.norm_f32 ? "f32" : w.dt();
  const std::string eps = "{eps = " + std::to_string(s.eps) + "}";
  auto norm_w = [&](const std::string& name, int64_t width) { return w.weight(L + name, nt + "[" + std::to_string(width) + "]"); };
  // rmsnorm of `x` (type `type`) with weight `name`; with norms_in_f32 between casts to f32 and back.
  auto norm = [&](const std::string& id, const std::string& x_value, const std::string& name, int64_t width, const std::string& type) {
    if (!s.norms_in_f32) return w.emit(n + id, "rmsnorm(" + x_value + ", " + norm_w(name, width) + ") " + eps, type);
    const std::string f32 = "f32" + type.substr(type.find('['));
    const std::string x32 = w.emit(n + id + "_in", "cast(" + x_value + ") {dtype = \"f32\"}", f32);
    const std::string y32 = w.emit(n + id + "_f32", "rmsnorm(" + x32 + ", " + norm_w(name, width) + ") " + eps, f32);
    return w.emit(n + id, "cast(" + y32 + ") {dtype = \"" + w.dt() + "\"}", type);
  };
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  auto proj = [&](const std::string& name, const std::string& in, int64_t out_n, int64_t in_n) {
    const std::string wt = w.weight(L + name + ".weight", w.dt() + "[" + std::to_string(out_n) + ", " + std::to_string(in_n) + "]");
    return w.emit(n + name, "linear(" + in + ", " + wt + ")", w.act(out_n));
  };
  std::string h = x;
  if (s.pre_norms) h = norm("in_norm", x, "input_norm.weight", s.hidden, w.act(s.hidden));
  std::string qp = proj("q_proj", h, q, s.hidden), kp = proj("k_proj", h, kv, s.hidden);
  const std::string vp = proj("v_proj", h, kv, s.hidden);
  if (s.qk_norm_whole) {
    qp = norm("q_norm", qp, "q_norm.weight", q, w.act(q));
    kp = norm("k_norm", kp, "k_norm.weight", kv, w.act(kv));
  }
  auto heads = [&](const std::string& v, const std::string& name, int64_t count) {
    return w.emit(n + name, "reshape(" + v + ") {shape = [" + w.rows() + ", " + std::to_string(count) + ", " + std::to_string(s.head_dim) + "]}",
                  w.act(count, s.head_dim));
  };
  std::string q3, k3;
  const std::string v3 = heads(vp, "v3", s.kv_heads);
  if (s.qk_norm_per_head && s.norms_in_f32) {
    // The recognizer's layouts: one token's query as [H, 1, D]; a single kv head's key as [T, D].
    const bool one = w.rows() == "1";
    const std::string q_rows = one ? w.dt() + "[" + std::to_string(s.heads) + ", 1, " + std::to_string(s.head_dim) + "]" : w.act(s.heads, s.head_dim);
    const std::string qh = w.emit(n + "q_heads", "reshape(" + qp + ") {shape = [" + (one ? std::to_string(s.heads) + ", 1" : w.rows() + ", " + std::to_string(s.heads)) +
                                                     ", " + std::to_string(s.head_dim) + "]}", q_rows);
    q3 = norm("q_norm", qh, "q_norm.weight", s.head_dim, q_rows);
    if (one) q3 = heads(q3, "q3", s.heads);
    k3 = s.kv_heads == 1 ? heads(norm("k_norm", kp, "k_norm.weight", s.head_dim, w.act(kv)), "k3", 1)
                         : norm("k_norm", heads(kp, "k3", s.kv_heads), "k_norm.weight", s.head_dim, w.act(s.kv_heads, s.head_dim));
  } else {
    q3 = heads(qp, "q3", s.heads);
    k3 = heads(kp, "k3", s.kv_heads);
    if (s.qk_norm_per_head) {
      q3 = norm("q_norm", q3, "q_norm.weight", s.head_dim, w.act(s.heads, s.head_dim));
      k3 = norm("k_norm", k3, "k_norm.weight", s.head_dim, w.act(s.kv_heads, s.head_dim));
    }
  }
  const std::string qr = w.emit(n + "q_rope", "rope(" + q3 + ", %pos) {" + s.rope_attrs + "}", w.act(s.heads, s.head_dim));
  const std::string kr = w.emit(n + "k_rope", "rope(" + k3 + ", %pos) {" + s.rope_attrs + "}", w.act(s.kv_heads, s.head_dim));
  const std::string cache = w.dt() + "[L, " + std::to_string(s.kv_heads) + ", " + std::to_string(s.head_dim) + "]";
  const std::string kc = w.emit(n + "k_cache", "kv_append(" + kr + ", %pos) {state = \"kv." + std::to_string(layer) + ".k\"}", cache);
  const std::string vc = w.emit(n + "v_cache", "kv_append(" + v3 + ", %pos) {state = \"kv." + std::to_string(layer) + ".v\"}", cache);
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%.17g", 1.0 / std::sqrt(static_cast<double>(s.head_dim)));
  std::string attrs = "{scale = " + std::string(scale) + (std::string(scale).find('.') == std::string::npos ? ".0" : "");
  if (s.window > 0) attrs += ", window = " + std::to_string(s.window);
  attrs += "}";
  const std::string a = w.emit(n + "attn", "attention(" + qr + ", " + kc + ", " + vc + ", %pos) " + attrs, w.act(s.heads, s.head_dim));
  const std::string a2 = w.emit(n + "attn_rows", "reshape(" + a + ") {shape = [" + w.rows() + ", " + std::to_string(q) + "]}", w.act(q));
  std::string o = proj("o_proj", a2, s.hidden, q);
  if (s.sandwich) o = norm("post_attn", o, "post_attention_norm.weight", s.hidden, w.act(s.hidden));
  const std::string h2 = w.emit(n + "h2", "add(" + x + ", " + o + ")", w.act(s.hidden));
  std::string m = h2;
  if (s.pre_norms) m = norm("ff_norm", h2, "pre_feedforward_norm.weight", s.hidden, w.act(s.hidden));
  const std::string g = proj("gate_proj", m, s.inter, s.hidden), u = proj("up_proj", m, s.inter, s.hidden);
  std::string act;
  if (s.act == "silu") {
    act = w.emit(n + "act", "silu(" + g + ")", w.act(s.inter));
  } else if (s.act == "gelu_tanh") {
    act = w.emit(n + "act", "gelu(" + g + ") {approximate = \"tanh\"}", w.act(s.inter));
  } else {  // gelu_tanh_f32
    const std::string f32 = "f32[" + w.rows() + ", " + std::to_string(s.inter) + "]";
    const std::string g32 = w.emit(n + "gate_f32", "cast(" + g + ") {dtype = \"f32\"}", f32);
    const std::string a32 = w.emit(n + "act_f32", "gelu(" + g32 + ") {approximate = \"tanh\"}", f32);
    act = w.emit(n + "act", "cast(" + a32 + ") {dtype = \"" + w.dt() + "\"}", w.act(s.inter));
  }
  const std::string gated = w.emit(n + "gated", "mul(" + act + ", " + u + ")", w.act(s.inter));
  std::string d = proj("down_proj", gated, s.hidden, s.inter);
  if (s.sandwich) d = norm("post_ff", d, "post_feedforward_norm.weight", s.hidden, w.act(s.hidden));
  return w.emit(n + "h3", "add(" + h2 + ", " + d + ")", w.act(s.hidden));
}

inline std::string module_text(const std::string& name, const std::vector<LayerShape>& layers, ir::DType dtype) {
  const std::string dt(ir::dtype_name(dtype));
  std::ostringstream out;
  out << "module " << name << " {\n";
  for (size_t l = 0; l < layers.size(); ++l) out << params_of(layers[l], static_cast<int>(l), dt);
  for (const char* rows : {"1", "T"}) {
    const int64_t hidden = layers.front().hidden;
    out << "  func @" << (std::string(rows) == "1" ? "decode" : "prefill") << "(%x: " << dt << "[" << rows << ", " << hidden
        << "], %pos: i32[]) -> (" << dt << "[" << rows << ", " << hidden << "]) {\n";
    LayerWriter w(out, dt, rows);
    std::string x = "%x";
    for (size_t l = 0; l < layers.size(); ++l) x = layer_body(w, layers[l], static_cast<int>(l), x);
    out << "    return " << x << "\n  }\n";
  }
  out << "}\n";
  return out.str();
}

// Phi-3's RoPE as a table: its own inverse frequencies (theta 10000, D = 96) stretched by 1.5 past
// the first quarter, as a long-context scaling would, and cos/sin scaled by 1.19.
inline std::string phi3_table_rope_attrs() {
  std::ostringstream attrs;
  attrs << "inv_freq = [";
  for (int i = 0; i < 48; ++i) {
    const float inv = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / 96.0f) / (i < 12 ? 1.0f : 1.5f);
    char text[64];
    std::snprintf(text, sizeof(text), "%.9e", static_cast<double>(inv));
    attrs << (i ? ", " : "") << text;
  }
  attrs << "], scale = 1.19";
  return attrs.str();
}

inline LayerShape gemma3_layer(bool global, bool raised = false) {
  LayerShape s{1152, 4, 1, 256, 6912, 1e-6, global ? "theta = 1000000.0" : "theta = 10000.0"};
  s.window = global ? 0 : 512;
  s.norm_f32 = true;
  s.qk_norm_per_head = true;
  s.sandwich = true;
  s.act = global && !raised ? "gelu_tanh_f32" : "gelu_tanh";
  s.norms_in_f32 = raised;
  return s;
}

inline LayerShape phi3_layer(bool table) {
  LayerShape s{3072, 32, 32, 96, 8192, 1e-5, table ? phi3_table_rope_attrs() : "theta = 10000.0"};
  s.window = 2047;
  return s;
}

inline LayerShape olmo2_layer() {
  LayerShape s{2048, 16, 16, 128, 8192, 1e-6, "theta = 500000.0"};
  s.qk_norm_whole = true;
  s.sandwich = true;
  s.pre_norms = false;
  return s;
}

inline std::vector<DecoderModule> decoder_modules(ir::DType dtype) {
  return {{"gemma3", module_text("gemma3", {gemma3_layer(false), gemma3_layer(true)}, dtype)},
          {"gemma3_raised", module_text("gemma3_raised", {gemma3_layer(false, true), gemma3_layer(true, true)}, dtype)},
          {"phi3", module_text("phi3", {phi3_layer(false)}, dtype)},
          {"phi3_table", module_text("phi3_table", {phi3_layer(true)}, dtype)},
          {"olmo2", module_text("olmo2", {olmo2_layer()}, dtype)}};
}

}  // namespace agentcompile::testing
