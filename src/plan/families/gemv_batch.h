// The batched decode GEMV family's record (plan/families/gemv_batch.cpp, codegen/renderers/gemv_batch.cpp,
// src/kernels/gemv_batch.cuh): a matmul region of decode_batch (a few tokens, each its own sequence)
// and its schedule.
#pragma once

#include <cstdint>

#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

struct GemvBatchSchedule {
  int64_t threads = 128;
  int64_t tiles = 1;         // 16-row tiles of W per warp (MT)
  int64_t token_tiles = 1;   // 8-token n-tiles per block row (NT): a block row serves 8 or 16 tokens
  int64_t unroll = 1;        // 32-element steps of K in flight
  int64_t split = 1;         // warps that share rows, each over a slice of K
  int64_t x_ahead = 0;       // X_AHEAD: 2 loads x of the next batch of steps into registers with the batch
                             // before; 0 requests it as its batch starts (the kernel takes any nonzero as 2)
};

struct GemvBatchConfig final : FamilyConfig {
  MatmulMatch match;
  GemvBatchSchedule schedule;

  GemvBatchConfig(MatmulMatch m, GemvBatchSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return false; }  // the cuBLAS family holds the fallback of matmuls
};

}  // namespace agentcompile::plan
