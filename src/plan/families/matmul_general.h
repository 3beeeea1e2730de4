// Matching the matmul regions the fixed-epilogue matcher (matmul_match.h) does not take: one linear
// or one (batched) matmul, its operands read directly or through a transpose of their last two axes
// (a cuBLAS operand flag, no copy), followed by any pointwise epilogue of the product's shape. The
// GEMM runs as a cuBLAS strided-batched call; an epilogue (a linear's bias included) is a generated
// row program over the product, which the GEMM leaves in the workspace in fp32.
//
// Match (variant "program"): roles a, b (operand slots), c (the product's output slot when there is
// no epilogue); facts batch, M (0 for T rows), N, K, trans_a, trans_b, epilogue (0/1), and the
// epilogue's encoded row program (row_program.h), whose GEMM result is the load of slot "workspace".
#pragma once

#include <optional>

#include "plan/template_family.h"

namespace agentcompile::plan {

std::optional<Match> match_general_matmul(const RegionContext& ctx);

// The launches of a "program" match: the cuBLAS call, then the epilogue kernel `<base>_program`.
std::vector<Launch> general_matmul_launches(const Match& match, const std::string& base);
int64_t general_matmul_workspace_per_token(const Match& match);
int64_t general_matmul_workspace_fixed(const Match& match);

}  // namespace agentcompile::plan
