// The quantized GEMV family's record (plan/families/qgemv.cpp, codegen/renderers/qgemv.cpp): a
// matmul region (matmul_match.h) whose weights are in a row format of ir/quant.h (int8 per channel,
// int4 in groups), with the f16 GEMV's schedule and the kernel that computes it; one token per block
// row of the grid.
#pragma once

#include <cstdint>

#include "plan/families/gemv.h"
#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

// How a candidate computes its dot products: f32 FMAs per element (qgemv.cuh), or the tensor cores'
// mma.sync with the weights as the B operand (qgemv_mma.cuh: int4 groups, f16 activations; its
// schedule's rows are 8 or 16 per warp, one or two mma tiles, and its unroll counts 128-element slabs).
enum class QGemvKernel { kScalar, kMma };

struct QGemvConfig final : FamilyConfig {
  MatmulMatch match;
  GemvSchedule schedule;
  int64_t tokens_static = 0;  // the region's static row count; 0: T (one block row per token)
  QGemvKernel kernel = QGemvKernel::kScalar;

  QGemvConfig(MatmulMatch m, GemvSchedule s, int64_t tokens, QGemvKernel k = QGemvKernel::kScalar)
      : match(std::move(m)), schedule(s), tokens_static(tokens), kernel(k) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return false; }  // the cuBLAS family's dequantize + GEMM is the fallback
};

// The quantized formats the family reads (int8 per channel or in groups, int4 groups with zero points,
// offsets or neither).
bool qgemv_reads(ir::DType w_dtype);
// Whether the tensor-core kernel implements a match: int4 groups or int8 (per channel or in groups), f16 activations.
bool qgemv_mma_reads(const MatmulMatch& match);
// The format code of dequant.cuh (ac::kQInt8, ...) for a row format the family reads.
const char* qgemv_format_code(ir::DType w_dtype);

}  // namespace agentcompile::plan
