// Disjointness of the tensors' byte ranges in one file (see tensor_ranges.h): sorted by start, each
// range must begin at or after the furthest end seen so far.
#include "frontend/tensor_ranges.h"

#include <algorithm>

namespace agentcompile::frontend {

Status check_disjoint(const std::string& source, std::vector<TensorRange> ranges) {
  std::erase_if(ranges, [](const TensorRange& r) { return r.end <= r.begin; });
  std::sort(ranges.begin(), ranges.end(), [](const TensorRange& a, const TensorRange& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  const TensorRange* reach = nullptr;  // the range reaching furthest so far
  for (const TensorRange& range : ranges) {
    if (reach && range.begin < reach->end)
      return error(ErrorCode::kParse, source + ": tensors '" + *reach->name + "' [" + std::to_string(reach->begin) + ", " +
                                          std::to_string(reach->end) + ") and '" + *range.name + "' [" + std::to_string(range.begin) +
                                          ", " + std::to_string(range.end) + ") overlap");
    if (!reach || range.end > reach->end) reach = &range;
  }
  return Status::ok();
}

}  // namespace agentcompile::frontend
