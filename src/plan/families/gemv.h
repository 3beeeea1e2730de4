// The decode GEMV family's record (plan/families/gemv.cpp, codegen/renderers/gemv.cpp): a matmul
// region of one token (matmul_match.h) and its schedule.
#pragma once

#include <cstdint>

#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

struct GemvSchedule {
  int64_t threads = 128;
  int64_t rows = 1;    // output rows per warp
  int64_t unroll = 1;  // 16-byte weight loads in flight per row and lane
  int64_t split = 1;   // warps that share a row, each over a slice of K
};

struct GemvConfig final : FamilyConfig {
  MatmulMatch match;
  GemvSchedule schedule;

  GemvConfig(MatmulMatch m, GemvSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return false; }  // the cuBLAS family holds the fallback of matmuls
};

}  // namespace agentcompile::plan
