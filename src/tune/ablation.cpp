// The advisor ablation on one exhaustive measurement (see ablation.h).
#include "tune/ablation.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <numeric>

#include "tune/search.h"

namespace agentcompile::tune {

using json = nlohmann::json;

namespace {

std::string format(const char* fmt, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), fmt, value);
  return buffer;
}

std::string pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string budget_name(int budget) { return budget <= 0 ? "all" : std::to_string(budget); }

}  // namespace

RegionMeasurement measurement_of(const std::string& region, int sites, const std::vector<plan::Candidate>& candidates,
                                 const std::vector<CandidateResult>& results, const std::vector<plan::Bucket>& buckets, bool per_bucket) {
  RegionMeasurement m;
  m.region = region;
  m.sites = sites;
  const size_t n = candidates.size();
  for (const auto& c : candidates) m.ids.push_back(c.id);
  for (const auto& b : buckets) m.buckets.push_back(b.name);
  const size_t timings_needed = per_bucket ? buckets.size() : 1;
  m.validated.assign(n, false);
  m.latency_us.assign(buckets.size(), std::vector<double>(n, std::numeric_limits<double>::quiet_NaN()));
  for (size_t i = 0; i < n && i < results.size(); ++i) {
    const auto& r = results[i];
    if (!r.validated || r.timings.size() < timings_needed) continue;
    m.validated[i] = true;
    for (size_t b = 0; b < buckets.size(); ++b) m.latency_us[b][i] = r.timings[per_bucket ? b : 0].median_us;
  }
  return m;
}

int pick(const RegionMeasurement& region, size_t bucket, const std::vector<int>& measured) {
  int best = -1;
  for (int i : measured) {
    if (!region.validated[static_cast<size_t>(i)]) continue;
    if (best < 0 || region.latency_us[bucket][static_cast<size_t>(i)] < region.latency_us[bucket][static_cast<size_t>(best)]) best = i;
  }
  return best;
}

double AblationRow::regret_pct(const std::string& bucket) const {
  const auto l = latency_us.find(bucket), b = best_us.find(bucket);
  if (l == latency_us.end() || b == best_us.end() || b->second <= 0) return 0;
  return 100 * (l->second / b->second - 1);
}

double AblationRow::total_regret_pct() const {
  double picks = 0, best = 0;
  for (const auto& [bucket, us] : latency_us) picks += us;
  for (const auto& [bucket, us] : best_us) best += us;
  return best > 0 ? 100 * (picks / best - 1) : 0;
}

Ablation ablate(const std::vector<RegionMeasurement>& regions, const std::vector<std::string>& orderings,
                const std::vector<int>& budgets) {
  Ablation a;
  std::vector<std::vector<int>> everything(regions.size());
  std::vector<std::vector<int>> best(regions.size());  // [region][bucket]
  std::vector<std::vector<size_t>> decision_of(regions.size());
  for (size_t r = 0; r < regions.size(); ++r) {
    const auto& region = regions[r];
    everything[r].resize(region.validated.size());
    std::iota(everything[r].begin(), everything[r].end(), 0);
    if (std::none_of(region.validated.begin(), region.validated.end(), [](bool v) { return v; })) continue;
    ++a.regions;
    for (size_t b = 0; b < region.buckets.size(); ++b) {
      if (std::find(a.buckets.begin(), a.buckets.end(), region.buckets[b]) == a.buckets.end()) a.buckets.push_back(region.buckets[b]);
      const int winner = pick(region, b, everything[r]);
      best[r].push_back(winner);
      decision_of[r].push_back(a.decisions.size());
      a.decisions.push_back({region.region, region.buckets[b], region.sites, region.ids[static_cast<size_t>(winner)],
                             region.latency_us[b][static_cast<size_t>(winner)], {}});
    }
  }
  for (const auto& ordering : orderings) {
    const std::vector<int> row_budgets = ordering == "exhaustive" ? std::vector<int>{0} : budgets;
    for (int budget : row_budgets) {
      AblationRow row;
      row.ordering = ordering;
      row.budget = budget;
      double spent = 0;
      for (size_t r = 0; r < regions.size(); ++r) {
        const auto& region = regions[r];
        if (best[r].empty()) continue;
        const auto order_it = region.orders.find(ordering);
        const std::vector<int>& order = ordering == "exhaustive" || order_it == region.orders.end() ? everything[r] : order_it->second;
        const std::vector<int> measured = budget_prefix(order, region.validated, ordering == "exhaustive" ? 0 : budget);
        spent += static_cast<double>(measured.size());
        for (size_t b = 0; b < region.buckets.size(); ++b) {
          const int chosen = pick(region, b, measured);
          const int winner = best[r][b];
          ++row.decisions;
          row.best_picks += chosen == winner;
          row.latency_us[region.buckets[b]] += region.sites * region.latency_us[b][static_cast<size_t>(chosen)];
          row.best_us[region.buckets[b]] += region.sites * region.latency_us[b][static_cast<size_t>(winner)];
          a.decisions[decision_of[r][b]].picks[ordering + "@" + budget_name(row.budget)] = region.ids[static_cast<size_t>(chosen)];
        }
      }
      row.mean_spent = a.regions ? spent / static_cast<double>(a.regions) : 0;
      a.rows.push_back(row);
    }
  }
  return a;
}

std::string ablation_text(const Ablation& a) {
  std::string out =
      "Advisor ablation: every ordering is evaluated on ONE exhaustive measurement of all candidates (nothing is\n"
      "re-measured per ordering). At budget K an ordering picks the fastest validated candidate among its first K\n"
      "(continuing until one validates). Latency: sum over every site of every region, per bucket, in µs.\n\n";
  std::string header = pad("ordering", 12) + pad("budget", 8) + pad("spent", 7) + pad("best picks", 12);
  for (const auto& bucket : a.buckets) header += pad(bucket + " µs (regret)", 26);
  out += header + "regret\n";
  for (const auto& row : a.rows) {
    std::string line = pad(row.ordering, 12) + pad(budget_name(row.budget), 8) + pad(format("%.1f", row.mean_spent), 7) +
                       pad(std::to_string(row.best_picks) + "/" + std::to_string(row.decisions), 12);
    for (const auto& bucket : a.buckets) {
      const auto it = row.latency_us.find(bucket);
      line += pad(it == row.latency_us.end() ? "-" : format("%.1f", it->second) + " (" + format("%+.1f%%", row.regret_pct(bucket)) + ")", 26);
    }
    out += line + format("%+.1f%%", row.total_regret_pct()) + "\n";
  }
  if (a.rows.empty() || a.regions == 0) out += "(no region has a validated, measured candidate)\n";
  return out;
}

json ablation_json(const Ablation& a) {
  json rows = json::array();
  for (const auto& row : a.rows) {
    json buckets = json::object();
    for (const auto& [bucket, us] : row.latency_us)
      buckets[bucket] = {{"latency_us", us}, {"best_us", row.best_us.at(bucket)}, {"regret_pct", row.regret_pct(bucket)}};
    rows.push_back({{"ordering", row.ordering}, {"budget", budget_name(row.budget)}, {"mean_spent", row.mean_spent},
                    {"best_picks", row.best_picks}, {"decisions", row.decisions}, {"buckets", buckets},
                    {"regret_pct", row.total_regret_pct()}});
  }
  json decisions = json::array();
  for (const auto& d : a.decisions)
    decisions.push_back({{"region", d.region}, {"bucket", d.bucket}, {"sites", d.sites}, {"best", d.best}, {"best_us", d.best_us}, {"picks", d.picks}});
  return json{{"format", "agentcompile-ablation/1"},
              {"note", "every ordering is evaluated on one exhaustive measurement of all candidates; nothing is re-measured per ordering"},
              {"measured", true}, {"regions", a.regions}, {"buckets", a.buckets}, {"rows", rows}, {"decisions", decisions}};
}

// The orderings the ablation compares, per region.
std::map<std::string, std::vector<int>> orderings_of(const std::string& region, size_t candidates, const std::vector<int>& advised,
                                                     uint64_t seed) {
  std::vector<int> heuristic(candidates);
  std::iota(heuristic.begin(), heuristic.end(), 0);
  return {{"heuristic", heuristic}, {"advisor", advised}, {"random", random_order(candidates, seed, region)}};
}

// The ablation from the exhaustive measurement (or, without a GPU, a record that there is none).
AblationRecord record_ablation(const std::vector<RegionOrders>& regions, const std::vector<RegionMeasurement>& measurements,
                               const SearchOptions& options, const json& advisor, bool gpu) {
  AblationRecord record;
  json orders = json::object();
  for (const auto& region : regions) {
    json named = json::object();
    for (const auto& [name, order] : region.orders) {
      named[name] = json::array();
      for (int i : order) named[name].push_back(region.ids[static_cast<size_t>(i)]);
    }
    orders[region.region] = named;
  }
  if (!gpu) {
    record.table = "Advisor ablation: not measured (no GPU): the orderings are recorded in ablation.json, but no ordering can be evaluated.\n";
    record.json = {{"format", "agentcompile-ablation/1"}, {"measured", false}, {"note", "no GPU: nothing was measured"}};
  } else {
    const Ablation ablation = ablate(measurements, {"heuristic", "advisor", "random", "exhaustive"}, options.ablate_budgets);
    record.table = ablation_text(ablation);
    if (advisor == "none") record.table += "(no advisor: the advisor ordering is the heuristic order)\n";
    record.json = ablation_json(ablation);
  }
  record.json["orders"] = orders;
  record.json["seed"] = options.ablate_seed;
  record.json["advisor"] = advisor;
  record.json["table"] = record.table;
  return record;
}

}  // namespace agentcompile::tune
