// Matching the matmul regions the fixed-epilogue matcher (matmul_match.h) does not take: one linear
// or one (batched) matmul, its operands read directly or through a transpose of their last two axes
// (a cuBLAS operand flag, no copy), followed by any pointwise epilogue of the product's shape. The
// GEMM runs as a cuBLAS strided-batched call; an epilogue (a linear's bias included) is a generated
// row program over the product, which the GEMM leaves in the workspace in fp32.
//
// The serialized view (variant "program"): roles a, b (operand slots), c (the product's output slot
// when there is no epilogue); facts batch, batch_T, M (0 for T rows), N, K, trans_a, trans_b,
// epilogue (0/1), epilogue_vec and the epilogue's encoded row program (row_program.h), whose GEMM
// result is the load of slot "workspace".
#pragma once

#include <optional>
#include <string>

#include "plan/families/row_program.h"
#include "plan/template_family.h"

namespace agentcompile::plan {

struct GeneralMatmul {
  ir::DType dtype = ir::DType::kF16;      // the operands and the product
  ir::DType out_dtype = ir::DType::kF16;  // the first output's
  std::string a, b;                       // operand slots
  std::string c;                          // the product's output slot; "" with an epilogue
  int64_t batch = 1;
  bool batch_T = false;                   // the batch is T ([T, M, N] products)
  int64_t M = 0;                          // rows; 0: T rows
  int64_t N = 0, K = 0;
  bool trans_a = false, trans_b = false;  // operands read transposed (cuBLAS operand flags)
  std::optional<RowProgram> epilogue;     // over the fp32 product in the workspace
  int epilogue_vec = 1;                   // the epilogue's vector width
};

std::optional<GeneralMatmul> match_general_matmul(const RegionContext& ctx);

// The serialized view.
void add_general_matmul_view(const GeneralMatmul& matmul, Match& view);

// The launches of a general matmul: the cuBLAS call, then the epilogue kernel `<base>_program`.
std::vector<Launch> general_matmul_launches(const GeneralMatmul& matmul, const std::string& base);
int64_t general_matmul_workspace_per_token(const GeneralMatmul& matmul);
int64_t general_matmul_workspace_fixed(const GeneralMatmul& matmul);

}  // namespace agentcompile::plan
