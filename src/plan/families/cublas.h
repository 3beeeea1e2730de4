// The cuBLAS fallback family's record (plan/families/cublas.cpp, codegen/renderers/cublas.cpp): a
// matmul region with a fixed epilogue (matmul_match.h: one cublasGemmEx per linear and a generated
// prologue and epilogue around them) or a general one (matmul_general.h: one strided-batched GEMM and
// a row-program epilogue).
#pragma once

#include <cstdint>
#include <variant>

#include "plan/families/matmul_general.h"
#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

struct CublasMatch {
  std::variant<MatmulMatch, GeneralMatmul> matmul;  // a fixed epilogue, or the "program" variant
  int64_t tokens_static = 0;                        // the fixed epilogue's static row count; 0: T

  const MatmulMatch* fixed() const { return std::get_if<MatmulMatch>(&matmul); }
  const GeneralMatmul* program() const { return std::get_if<GeneralMatmul>(&matmul); }
};

struct CublasConfig final : FamilyConfig {
  CublasMatch match;
  // An fp32 general matmul as three TF32 tensor-core GEMMs on split operands (matmul_general.h,
  // split_tf32.cuh): a candidate like any other, validated and timed; the plain fp32 GEMM stays the fallback.
  bool split_tf32 = false;

  explicit CublasConfig(CublasMatch m, bool split = false) : match(std::move(m)), split_tf32(split) {}
  Match match_view() const override;
  ParamSet params_view() const override { return split_tf32 ? ParamSet{{"split_tf32", 1}} : ParamSet{{"fallback", 1}}; }
  bool fallback() const override { return !split_tf32; }  // the plain GEMM is always in a matmul region's space
};

// Threads of the RMSNorm prologue kernel (one row per block).
constexpr int kCublasNormThreads = 256;

// Whether the GEMMs leave fp32 products in the workspace for the epilogue to add the bias to: a
// linear's bias with a 16-bit output is added before the one rounding to the output dtype, as
// torch's addmm does (rounding the product first and the sum again differs by an ulp in many
// elements, which a sum over the row then accumulates: KernelBench L2 18 f16).
bool cublas_bias_in_fp32(const MatmulMatch& match);

// Where the normalized row of a norm prologue starts in the workspace, in bytes per token: after
// the fp32 gate and up results of a gate_up epilogue, or the fp32 products of a bias in fp32;
// rounded up to 16 bytes, so the row is aligned for the norm kernel's 16-byte stores at any T.
int64_t cublas_normalized_row_offset(const MatmulMatch& match);

// Quantized weights (a row format, qgemv_reads): each linear's weight is dequantized to x's dtype
// into the workspace's fixed part, after the per-token part, and its GEMM reads it from there.
// Bytes per token before the fixed part (a multiple of 256, so the fixed part starts aligned at any T:
// cuBLAS failed to launch on f16 weights 8 bytes off, gate/up with N=3 on an H200), and the start of
// segment `s`'s rows within the fixed part.
int64_t cublas_per_token_bytes(const MatmulMatch& match);
int64_t cublas_dequantized_offset(const MatmulMatch& match, size_t segment);
// Threads of a dequantize launch (one block per weight row).
constexpr int kCublasDequantThreads = 256;

}  // namespace agentcompile::plan
