// Split axes through reshapes and transposes (see split_axis.h).
#include "shard/split_axis.h"

namespace agentcompile::shard {

int64_t reshape_split_axis(const ir::Shape& from, const ir::Shape& to, int64_t axis) {
  size_t i = 0, j = 0;
  while (i < from.size() && j < to.size()) {
    const size_t i0 = i, j0 = j;
    if (!from[i].is_static() || !to[j].is_static()) {
      if (from[i] != to[j]) return -1;  // a symbolic dim stands alone, on both sides
      ++i, ++j;
    } else {
      int64_t a = from[i++].value, b = to[j++].value;
      while (a != b) {
        if (a < b) {
          if (i == from.size() || !from[i].is_static()) return -1;
          a *= from[i++].value;
        } else {
          if (j == to.size() || !to[j].is_static()) return -1;
          b *= to[j++].value;
        }
      }
    }
    if (axis < static_cast<int64_t>(i0) || axis >= static_cast<int64_t>(i)) continue;
    // The group holds the split: it must be the group's outermost dim of size > 1.
    for (size_t d = i0; d < static_cast<size_t>(axis); ++d)
      if (!from[d].is_static() || from[d].value != 1) return -1;
    return static_cast<int64_t>(j0);
  }
  return -1;
}

int64_t transpose_split_axis(const std::vector<ir::Dim>& perm, int64_t axis) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i].value == axis) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace agentcompile::shard
