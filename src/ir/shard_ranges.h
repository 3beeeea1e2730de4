// A sharded parameter's ranges (ParamDecl::shard_ranges) as copies out of its whole checkpoint tensor:
// what the interpreter does with a whole tensor, and the list of contiguous byte runs a loader that
// reads only the rank's part (frontend/tensor_ranges.h) asks a file for.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::ir {

// One contiguous run: `bytes` bytes at `source` in the whole tensor go to `target` in the rank's part.
struct ShardRun {
  uint64_t source = 0, target = 0, bytes = 0;
};

// The runs of a sharded parameter of static shape whose elements take `element_bytes` each, in target
// order (they tile the rank's part exactly). A parameter that is not a shard is one run of everything.
std::vector<ShardRun> shard_runs(const ParamDecl& param, uint64_t element_bytes);

// The rank's part of `whole` (the checkpoint tensor, row-major, param.source_shape()).
template <typename T>
std::vector<T> cut_shard(const ParamDecl& param, const std::vector<T>& whole) {
  std::vector<T> part(static_cast<size_t>(static_elements(param.type.shape)));
  for (const ShardRun& run : shard_runs(param, sizeof(T)))
    std::copy_n(whole.data() + run.source / sizeof(T), run.bytes / sizeof(T), part.data() + run.target / sizeof(T));
  return part;
}

}  // namespace agentcompile::ir
