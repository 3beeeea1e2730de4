// Sharded parameters' copy runs (see shard_ranges.h).
#include "ir/shard_ranges.h"

namespace agentcompile::ir {

std::vector<ShardRun> shard_runs(const ParamDecl& param, uint64_t element_bytes) {
  const Shape& shape = param.type.shape;
  if (!param.is_shard()) return {{0, 0, static_cast<uint64_t>(static_elements(shape)) * element_bytes}};
  // The whole tensor as [outer, shard_of, inner] around the sharded axis; each range is a run of
  // length * inner elements in every one of the outer blocks.
  uint64_t outer = 1, inner = element_bytes;
  const auto axis = static_cast<size_t>(param.shard_axis);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < axis) outer *= static_cast<uint64_t>(shape[d].value);
    if (d > axis) inner *= static_cast<uint64_t>(shape[d].value);
  }
  const uint64_t part_row = static_cast<uint64_t>(shape[axis].value) * inner;  // one outer block of the part
  const uint64_t whole_row = static_cast<uint64_t>(param.shard_of) * inner;
  std::vector<ShardRun> runs;
  for (uint64_t o = 0; o < outer; ++o) {
    uint64_t target = o * part_row;
    for (const ParamDecl::Range& range : param.shard_ranges) {
      const uint64_t bytes = static_cast<uint64_t>(range.length) * inner;
      runs.push_back({o * whole_row + static_cast<uint64_t>(range.start) * inner, target, bytes});
      target += bytes;
    }
  }
  return runs;
}

}  // namespace agentcompile::ir
