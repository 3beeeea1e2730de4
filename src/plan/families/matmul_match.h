// Matching matmul regions with the epilogues the matmul families implement: one to three linears that
// read the same x (fused QKV: "multi"), optionally followed by a cast ("plain" with another output
// dtype), a residual add ("residual") or SiLU(gate)·up ("gate_up"). Roles: x, w0..w2, b0..b2 (biases),
// y0..y2, residual; facts: K, N (total rows, or the gate rows), rows0..rows2.
#pragma once

#include <optional>

#include "plan/template_family.h"

namespace agentcompile::plan {

enum class TokenCount { kOne, kAny };

std::optional<Match> match_matmul_region(const RegionContext& ctx, TokenCount tokens);

}  // namespace agentcompile::plan
