// How a value split over ranks along one axis stays split through layout ops: the axis it is split
// along after a reshape or transpose, or none when the op would mix ranks' blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::shard {

// A reshape of `from` to `to` (same elements) of a value split along `axis` of `from`. The dims are
// grouped into runs with equal products ([T, 4096] -> [T, 32, 128] is {T}->{T}, {4096}->{32, 128});
// the split must be the outermost dim (of size > 1) of its group, and lands on the outermost dim of the
// matching group: a rank's contiguous block of 4096 is a block of the 32 heads, and one of [T, 32] ->
// [T, 1, 32] a block of the one kv head (which then does not divide over several ranks, and the
// caller says so). -1 otherwise.
int64_t reshape_split_axis(const ir::Shape& from, const ir::Shape& to, int64_t axis);

// A transpose by `perm` (out dim i is in dim perm[i]) of a value split along `axis`.
int64_t transpose_split_axis(const std::vector<ir::Dim>& perm, int64_t axis);

}  // namespace agentcompile::shard
