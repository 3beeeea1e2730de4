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
  int64_t batch = 1;                      // products; per token when batch_T
  bool batch_T = false;                   // the batch is T * batch ([T, ..., M, N] products)
  int64_t M = 0;                          // rows; 0: T rows
  int64_t N = 0, K = 0;
  bool trans_a = false, trans_b = false;  // operands read transposed (cuBLAS operand flags)
  std::optional<RowProgram> epilogue;     // over the fp32 product in the workspace
  int epilogue_vec = 1;                   // the epilogue's vector width
};

std::optional<GeneralMatmul> match_general_matmul(const RegionContext& ctx);

// The serialized view.
void add_general_matmul_view(const GeneralMatmul& matmul, Match& view);

// A buffer in the workspace: `per_token` bytes per token in (the per-token part holds one [T, ...]
// array after another) plus `fixed` bytes; its slot is "workspace:<per_token>+<fixed>".
struct WorkspaceAt {
  int64_t per_token = 0, fixed = 0;
  std::string slot() const;
};

// An fp32 operand split for TF32 tensor cores (src/kernels/split_tf32.cuh): its high and low parts,
// each laid out as the operand is, and its element count (per token, plus fixed).
struct SplitOperand {
  WorkspaceAt hi, lo;
  int64_t per_token_elements = 0, fixed_elements = 0;
};

// Where a general matmul keeps its buffers: the fp32 product an epilogue reads (at the workspace's
// start), then with `split_tf32` both operands' high and low parts. Per-token buffers are rounded to
// 16 bytes a token and fixed ones to 256 bytes, so every buffer starts aligned for cuBLAS at any T.
struct GeneralMatmulWorkspace {
  int64_t per_token = 0, fixed = 0;  // totals
  WorkspaceAt product;               // with an epilogue; first of its part, so always the workspace's start
  std::optional<SplitOperand> a, b;
};
GeneralMatmulWorkspace general_matmul_workspace(const GeneralMatmul& matmul, bool split_tf32);
// Floats per thread of a split launch: 4 when both element counts allow 16-byte accesses.
int64_t general_matmul_split_vector(const SplitOperand& operand);

// The launches of a general matmul: the cuBLAS call, then the epilogue kernel `<base>_program`.
// With `split_tf32` (fp32 operands only), the operands are first split by `<base>_split_a` and
// `<base>_split_b`, and three TF32 GEMMs accumulate A_lo·B_hi, A_hi·B_lo and A_hi·B_hi into the
// product, smallest first (split_tf32.cuh says why that is fp32-accurate).
std::vector<Launch> general_matmul_launches(const GeneralMatmul& matmul, const std::string& base, bool split_tf32);

}  // namespace agentcompile::plan
