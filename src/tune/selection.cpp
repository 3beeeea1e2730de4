// Selection by measured latency of validated candidates (see selection.h).
#include "tune/selection.h"

#include <cstdio>

namespace agentcompile::tune {

namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace

Selection select_measured(const std::vector<plan::Candidate>& candidates, const std::vector<CandidateResult>& results,
                          size_t timing_index, const std::string& bucket) {
  Selection selection;
  selection.bucket = bucket;
  int best = -1, fallback = -1;
  double best_us = 0, fallback_us = 0;
  std::vector<std::string> rejections;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.validated || r.timings.size() <= timing_index) {
      if (!r.rejection.empty()) rejections.push_back(candidates[i].id + ": " + r.rejection.substr(0, 100));
      continue;
    }
    const double us = r.timings[timing_index].median_us;
    if (best < 0 || us < best_us) {
      best = static_cast<int>(i);
      best_us = us;
    }
    if (candidates[i].fallback && (fallback < 0 || us < fallback_us)) {  // the best fallback is the bar
      fallback = static_cast<int>(i);
      fallback_us = us;
    }
  }
  selection.measured = best >= 0;
  selection.candidate = best;
  if (best < 0) {
    selection.reason = "no candidate validated";
    for (const auto& why : rejections) selection.reason += "; " + why;
  } else if (candidates[static_cast<size_t>(best)].fallback) {
    selection.reason = "fallback: no validated candidate beat it (" + fixed(best_us, 2) + " us)";
  } else {
    selection.reason = "fastest validated: " + fixed(best_us, 2) + " us" +
                       (fallback >= 0 ? " vs fallback " + candidates[static_cast<size_t>(fallback)].family + " " +
                                            fixed(fallback_us, 2) + " us" : "");
  }
  return selection;
}

Selection select_unmeasured(const std::vector<codegen::CompileResult>& compiled, const std::string& bucket) {
  int first = -1;
  for (size_t i = 0; i < compiled.size() && first < 0; ++i)
    if (compiled[i].ok) first = static_cast<int>(i);
  return {bucket, first, first >= 0 ? "unmeasured: no GPU, heuristic order" : "no candidate compiled", false};
}

}  // namespace agentcompile::tune
