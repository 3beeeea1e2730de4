// Host mirror of ac::RegionArgs (src/kernels/common.cuh): the single by-value argument of every
// generated kernel. Layouts must match exactly; the static_assert guards the size.
#pragma once

#include <cstdint>

namespace agentcompile::gpu {

struct RegionArgs {
  const void* in[8] = {};
  void* out[8] = {};
  const void* w[8] = {};
  void* state[4] = {};
  void* workspace = nullptr;
  int32_t T = 1;
  int32_t L = 1;
};
static_assert(sizeof(RegionArgs) == 8 * 8 * 3 + 8 * 4 + 8 + 8, "RegionArgs must match ac::RegionArgs");

constexpr int kMaxSlots = 8;
constexpr int kMaxStates = 4;

}  // namespace agentcompile::gpu
