// Holding back possible stop-string prefixes (see stop_strings.h).
#include "serve/stop_strings.h"

#include <algorithm>

namespace agentcompile::serve {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopStringFilter::push(std::string_view text) {
  if (stopped_) return {};
  pending_ += text;
  // The earliest stop string wins; only the new text and the held suffix before it can contain one,
  // and pending_ is exactly that.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) first = std::min(first, pending_.find(stop));
  if (first != std::string::npos) {
    std::string released = pending_.substr(0, first);
    pending_.clear();
    stopped_ = true;
    return released;
  }
  size_t hold = 0;
  for (const std::string& stop : stops_) {
    const size_t longest = std::min(stop.size() - 1, pending_.size());
    for (size_t k = longest; k > hold; --k)
      if (pending_.compare(pending_.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
  }
  std::string released = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return released;
}

std::string StopStringFilter::flush() {
  std::string rest;
  if (!stopped_) rest.swap(pending_);
  pending_.clear();
  return rest;
}

}  // namespace agentcompile::serve
