// Matching matmul regions with the epilogues the matmul families implement: one to three linears that
// read the same x (fused QKV: "multi"), optionally followed by a cast ("plain" with another output
// dtype), a residual add ("residual") or act(gate)·up ("gate_up", act SiLU or GELU; casts between
// float dtypes may surround the activation and the product, as a graph that applies them in f32 has:
// the kernels compute the epilogue in f32 and round once, to the last value's dtype). Roles: x,
// w0..w2, b0..b2 (biases), y0..y2, residual; facts: K, N (total rows, or the gate rows), rows0..rows2,
// and gate_act (GateActivation below) where the activation is not SiLU.
// A region that opens with an RMSNorm prologue (one token; analysis/regions.h) adds the role norm_w
// and the facts norm = 1, norm_eps_bits (the float's bits) and, for f32 weights with 16-bit x
// (Gemma's 1 + w), norm_f32 = 1; x is then the norm's input, and the linears read the normalized row.
// Float casts around the norm (x cast to f32, normalized in f32, cast back) change nothing: the
// kernels normalize in f32 and round once.
// A residual-norm prologue (Gemma's sandwich norms; analysis/regions.h) comes before that norm:
// h = skip + rmsnorm(x) * post_w, and the norm prologue normalizes h. It adds the roles skip (the
// residual stream), post_w and h (an output, absent when only the norm reads h) and the facts
// post_norm = 1 and post_eps_bits; both norms' weights have one dtype (norm_f32 covers both). The
// kernels round h to x's dtype, as the unfused region stores it, and normalize the rounded h.
#pragma once

#include <optional>
#include <string>

#include "plan/template_family.h"

namespace agentcompile::plan {

enum class TokenCount { kOne, kAny };

std::optional<Match> match_matmul_region(const RegionContext& ctx, TokenCount tokens);

// The eps of a match's RMSNorm prologue and of its residual-norm prologue's post-norm (0 when it has none).
float matmul_norm_eps(const Match& match);
float matmul_post_norm_eps(const Match& match);
// What kernel names add for the prologues: "rmsnorm_", "rmsnorm_add_rmsnorm_" or "".
std::string matmul_prologue_tag(const Match& match);

// The gate activation of a "gate_up" match, as the kernels number it (src/kernels/activation.cuh).
enum class GateActivation { kSilu = 0, kGeluTanh = 1, kGeluErf = 2 };
GateActivation matmul_gate_activation(const Match& match);
// What kernel names add for the activation and the norm weights: "" for SiLU and same-dtype
// weights, else "_gelu_tanh" / "_gelu" and "_wf32".
std::string matmul_epilogue_tag(const Match& match);
// The activation's enumerator in kernel sources: "ac::kActGeluTanh", ...
std::string matmul_gate_activation_code(const Match& match);

}  // namespace agentcompile::plan
