// The decode GEMV family's record (plan/families/gemv.cpp, codegen/renderers/gemv.cpp): a matmul
// region of one token (matmul_match.h) and its schedule.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "plan/device_profile.h"
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

// One point of the schedule grid both GEMV families (gemv, qgemv) search, with what their heuristics
// score it by: blocks per token and 16-byte weight loads in flight per lane.
struct GemvGridPoint {
  GemvSchedule schedule;
  int64_t blocks = 0;
  int loads_in_flight = 0;
};

// threads {128, 256} x rows {1, 2, 4} x unroll {1, 2, 4} x split {1, 2, 4}, in that order, for N rows and
// `mats` weight matrices read together (gate/up: 2): the points whose warps divide by the split, whose
// loads in flight fit the register budget (16 loads, 4 registers each), and that `fits_k(split, unroll)`
// accepts (how a family's K divides into lanes and splits).
std::vector<GemvGridPoint> gemv_grid(int64_t N, int mats, const std::function<bool(int split, int unroll)>& fits_k);

// The heuristics' shared terms: the share of the machine the blocks fill (about two blocks per SM is
// full), and splitting K only where rows are too few to fill it.
double gemv_fill(int64_t blocks, const DeviceProfile& device);
double gemv_split_penalty(int64_t split, int64_t blocks, const DeviceProfile& device);

}  // namespace agentcompile::plan
