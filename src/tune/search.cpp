// The search budget and the selection outcomes (see search.h).
#include "tune/search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace agentcompile::tune {

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<int> budget_prefix(const std::vector<int>& order, const std::vector<bool>& validated, int budget) {
  const size_t first = budget <= 0 ? order.size() : std::min(order.size(), static_cast<size_t>(budget));
  std::vector<int> measured(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(first));
  auto any_valid = [&] {
    return std::any_of(measured.begin(), measured.end(), [&](int i) { return validated[static_cast<size_t>(i)]; });
  };
  for (size_t next = first; next < order.size() && !any_valid(); ++next) measured.push_back(order[next]);
  return measured;
}

Status admit_with_budget(const std::string& region, const std::vector<plan::Candidate>& candidates,
                         const std::vector<codegen::CompileResult>& compiled, AdmittedRegion& admitted, const AdmitFn& admit) {
  auto& s = admitted.search;
  const size_t n = candidates.size();
  if (s.order.size() != n) {
    s.order.resize(n);
    std::iota(s.order.begin(), s.order.end(), 0);
    s.order_source = "heuristic";
  }
  admitted.results.assign(n, {});
  for (size_t i = 0; i < n; ++i) {
    admitted.results[i].id = candidates[i].id;
    admitted.results[i].name = candidates[i].name();
    admitted.results[i].compiled = i < compiled.size() && compiled[i].ok;
  }
  s.measured.assign(n, false);
  bool any_valid = false;
  auto run = [&](const std::vector<int>& batch) -> Status {
    AC_ASSIGN_OR_RETURN(auto results, admit(batch));
    if (results.size() != batch.size()) return error(ErrorCode::kInternal, region + ": admission returned a result per candidate it was not given");
    for (size_t k = 0; k < batch.size(); ++k) {
      any_valid |= results[k].validated;
      admitted.results[static_cast<size_t>(batch[k])] = std::move(results[k]);
      s.measured[static_cast<size_t>(batch[k])] = true;
    }
    return Status::ok();
  };
  const size_t first = s.budget <= 0 ? n : std::min(n, static_cast<size_t>(s.budget));
  AC_TRY(run(std::vector<int>(s.order.begin(), s.order.begin() + static_cast<std::ptrdiff_t>(first))));
  size_t next = first;
  for (; next < n && !any_valid; ++next) AC_TRY(run({s.order[next]}));
  s.spent = static_cast<int>(next);
  s.exhaustive = next == n;
  if (next > first)
    s.note = "none of the first " + std::to_string(first) + " validated: continued to " + std::to_string(next) +
             (any_valid ? " (" + candidates[static_cast<size_t>(s.order[next - 1])].id + " validated)" : " (none validated)");
  return Status::ok();
}

std::vector<SearchRecord::BucketOutcome> selection_outcomes(const SearchRecord& s, const std::vector<CandidateResult>& results,
                                                            const std::vector<Selection>& selections, bool per_bucket) {
  std::vector<SearchRecord::BucketOutcome> outcomes;
  for (size_t b = 0; b < selections.size(); ++b) {
    SearchRecord::BucketOutcome outcome;
    const auto& selection = selections[b];
    outcome.bucket = selection.bucket;
    const auto it = std::find(s.order.begin(), s.order.end(), selection.candidate);
    if (selection.candidate >= 0 && it != s.order.end()) outcome.rank = static_cast<int>(it - s.order.begin()) + 1;
    const size_t t = per_bucket ? b : 0;
    if (s.exhaustive && selection.measured && selection.candidate >= 0) {
      double best = std::numeric_limits<double>::infinity();
      for (const auto& r : results)
        if (r.validated && r.timings.size() > t) best = std::min(best, r.timings[t].median_us);
      const auto& chosen = results[static_cast<size_t>(selection.candidate)];
      if (chosen.timings.size() > t && best > 0 && std::isfinite(best)) outcome.regret = chosen.timings[t].median_us / best - 1;
    }
    outcomes.push_back(outcome);
  }
  return outcomes;
}

std::vector<int> random_order(size_t n, uint64_t seed, const std::string& region_id) {
  uint64_t state = seed;
  for (unsigned char c : region_id) state = (state ^ c) * 0x100000001b3ull;  // FNV-1a over the id
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(splitmix64(state) % i)]);
  return order;
}

}  // namespace agentcompile::tune
