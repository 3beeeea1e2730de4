// Matching matmul regions with the epilogues the matmul families implement: one to three linears that
// read the same x (fused QKV: "multi"), optionally followed by a cast ("plain" with another output
// dtype), a residual add ("residual") or act(gate)·up ("gate_up", act SiLU or GELU; casts between
// float dtypes may surround the activation and the product, as a graph that applies them in f32 has:
// the kernels compute the epilogue in f32 and round once, to the last value's dtype).
// A region that opens with an RMSNorm prologue (one token; analysis/regions.h) has x as the norm's
// input, and the linears read the normalized row; its weights are x's dtype or, with 16-bit x, f32
// (Gemma's 1 + w). Float casts around the norm (x cast to f32, normalized in f32, cast back) change
// nothing: the kernels normalize in f32 and round once.
// A residual-norm prologue (Gemma's sandwich norms; analysis/regions.h) comes before that norm:
// h = skip + rmsnorm(x) * post_w, and the norm prologue normalizes h; both norms' weights have one
// dtype. The kernels round h to x's dtype, as the unfused region stores it, and normalize the rounded h.
// Its add-only form (a region that opens with the residual add, h = x + skip: a tensor-parallel rank's
// all-reduced row and the residual stream) has no post-norm.
//
// The serialized view (add_matmul_view): roles x, w0..w2, b0..b2 (biases), y0..y2, residual, norm_w,
// skip, post_w, h; facts K, N (total rows, or the gate rows), rows0..rows2, gate_act (GateActivation)
// where the activation is not SiLU, norm = 1 and norm_eps_bits (the float's bits), norm_f32 = 1,
// post_norm = 1 and post_eps_bits, w_format (the weights' ir::DType) where the weights are quantized.
// Families that read weights as `dtype` take only matches whose w_dtype is `dtype` (weights_are_plain).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/template_family.h"

namespace agentcompile::plan {

enum class TokenCount { kOne, kAny };

// The epilogue after the linears (the match's variant).
enum class MatmulEpilogue { kPlain, kMulti, kResidual, kGateUp };

// The gate activation of a "gate_up" match, as the kernels number it (src/kernels/activation.cuh).
enum class GateActivation { kSilu = 0, kGeluTanh = 1, kGeluErf = 2 };

struct MatmulSegment {
  int64_t rows = 0;  // the linear's output features
  std::string w;     // weight slot [rows, K]
  std::string b;     // bias slot [rows]; "" without a bias
  std::string y;     // output slot; "" where the epilogue consumes the product (gate_up's up)
};

struct NormPrologue {
  std::string w;  // weight slot [K]
  float eps = 0;
};

// h = skip + rmsnorm(x) * post_w, before the norm prologue (which then normalizes h); or, without a
// post-norm, h = skip + x: the residual add after a tensor-parallel all-reduce, whose sum no GEMV
// epilogue can take (the all-reduce comes between).
struct ResidualNormPrologue {
  std::string skip;    // the residual stream [K]
  std::string post_w;  // the post-norm's weight [K]; "" without a post-norm
  std::string h;       // output slot of h; "" when only the norm reads it
  float eps = 0;
  bool post_norm() const { return !post_w.empty(); }
};

struct MatmulMatch {
  ir::DType dtype = ir::DType::kF16;      // x (and the weights, unless they are quantized)
  ir::DType out_dtype = ir::DType::kF16;  // the outputs
  ir::DType w_dtype = ir::DType::kF16;    // every linear's weight: `dtype`, or one quantized format (ir/quant.h)
  MatmulEpilogue epilogue = MatmulEpilogue::kPlain;
  GateActivation gate_act = GateActivation::kSilu;
  int64_t K = 0;
  int64_t N = 0;                          // rows of all segments, or of the gate alone (gate_up)
  std::string x;                          // x [rows, K] (the norm's input under a prologue)
  std::string residual;                   // the residual epilogue's addend [rows, N]
  std::vector<MatmulSegment> segments;    // 1 to 3 linears; gate_up: the gate, then up
  std::optional<NormPrologue> norm;
  std::optional<ResidualNormPrologue> residual_norm;  // only with `norm`
  bool norm_f32 = false;                  // f32 norm weights (both norms') with 16-bit x
};

std::optional<MatmulMatch> match_matmul_region(const RegionContext& ctx, TokenCount tokens);

// The weights are of x's dtype (not a quantized format): what the f16/bf16/f32 matmul kernels read.
inline bool weights_are_plain(const MatmulMatch& match) { return !ir::is_quantized(match.w_dtype); }

// The serialized view: the variant ("plain", "multi", "residual", "gate_up"), dtypes, roles and facts.
void add_matmul_view(const MatmulMatch& match, Match& view);

// What kernel names add for the prologues: "rmsnorm_", "rmsnorm_add_rmsnorm_" or "".
std::string matmul_prologue_tag(const MatmulMatch& match);
// "plain", "multi", "residual" or "gate_up".
std::string matmul_epilogue_name(MatmulEpilogue epilogue);
// What kernel names add for the activation and the norm weights: "" for SiLU and same-dtype
// weights, else "_gelu_tanh" / "_gelu" and "_wf32".
std::string matmul_epilogue_tag(const MatmulMatch& match);
// The activation's enumerator in kernel sources: "ac::kActGeluTanh", ...
std::string matmul_gate_activation_code(GateActivation act);

}  // namespace agentcompile::plan
