// Matching matmul regions with the epilogues the matmul families implement: one to three linears that
// read the same x (fused QKV: "multi"), optionally followed by a cast ("plain" with another output
// dtype), a residual add ("residual") or SiLU(gate)·up ("gate_up"). Roles: x, w0..w2, b0..b2 (biases),
// y0..y2, residual; facts: K, N (total rows, or the gate rows), rows0..rows2.
// A region that opens with an RMSNorm prologue (one token; analysis/regions.h) adds the role norm_w
// and the facts norm = 1 and norm_eps_bits (the float's bits); x is then the norm's input, and the
// linears read the normalized row.
#pragma once

#include <optional>

#include "plan/template_family.h"

namespace agentcompile::plan {

enum class TokenCount { kOne, kAny };

std::optional<Match> match_matmul_region(const RegionContext& ctx, TokenCount tokens);

// The eps of a match's RMSNorm prologue (0 when it has none).
float matmul_norm_eps(const Match& match);

}  // namespace agentcompile::plan
