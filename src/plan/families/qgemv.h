// The quantized GEMV family's record (plan/families/qgemv.cpp, codegen/renderers/qgemv.cpp): a
// matmul region (matmul_match.h) whose weights are in a row format of ir/quant.h (int8 per channel,
// int4 in groups), with the f16 GEMV's schedule; one token per block row of the grid.
#pragma once

#include <cstdint>

#include "plan/families/gemv.h"
#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

struct QGemvConfig final : FamilyConfig {
  MatmulMatch match;
  GemvSchedule schedule;
  int64_t tokens_static = 0;  // the region's static row count; 0: T (one block row per token)

  QGemvConfig(MatmulMatch m, GemvSchedule s, int64_t tokens) : match(std::move(m)), schedule(s), tokens_static(tokens) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return false; }  // the cuBLAS family's dequantize + GEMM is the fallback
};

// The quantized formats the family reads (int8 per channel, int4 groups with or without zero points).
bool qgemv_reads(ir::DType w_dtype);

}  // namespace agentcompile::plan
