// Search over a region's candidates: the measuring order, the search budget, and the advisor
// ablation.
//
// Budget: only the first K candidates of the measuring order (advisor order, or the heuristic order
// c0, c1, ... without accepted advice) are admitted and timed; if none of them validates, admission
// continues down the order one candidate at a time until one does. Selection is unchanged: the
// fastest validated measured candidate. The record keeps where the selection ranked in the order,
// what the search spent and, when every candidate was measured, the regret against the best.
//
// Ablation: every candidate is measured once (exhaustive); from that one table of measurements,
// each ordering (heuristic, advisor, seeded random, exhaustive) is replayed at each budget: what it
// would have admitted, what it would have picked per bucket, and how much slower that is than the
// exhaustive best, summed over every site of every region. Nothing is re-measured per ordering.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/compiler.h"
#include "emit/artifact.h"

namespace agentcompile::search {

// The candidates (indices, in order) a budget admits, given which candidates validate: the first
// `budget` of `order` (0: all), then further ones until one validates (if any does).
std::vector<int> budget_prefix(const std::vector<int>& order, const std::vector<bool>& validated, int budget);

// Admits a subset of a region's candidates, by index into region.plan.candidates: their results, in
// the order asked.
using AdmitFn = std::function<Expected<std::vector<tune::CandidateResult>>(const std::vector<int>& indices)>;

// Admits region.search.order under region.search.budget through `admit`, filling region.results (one
// per candidate; unmeasured ones stay empty and are marked in region.search.measured).
Status admit_with_budget(emit::CompiledRegion& region, const AdmitFn& admit);

// After selection: the rank of each bucket's selection in the order and, if exhaustive, its regret.
void record_outcomes(emit::CompiledRegion& region, bool per_bucket);

// A deterministic shuffle of 0..n-1 from a seed and the region id (same on every platform).
std::vector<int> random_order(size_t n, uint64_t seed, const std::string& region_id);

// One region's exhaustive measurement, the input of the ablation.
struct RegionMeasurement {
  std::string region;
  int sites = 1;
  std::vector<std::string> ids;                   // candidate ids
  std::vector<std::string> buckets;               // bucket names
  std::vector<bool> validated;                    // per candidate: validated and timed at every bucket
  std::vector<std::vector<double>> latency_us;    // [bucket][candidate]
  std::map<std::string, std::vector<int>> orders; // ordering name -> measuring order
};

// From a measured region: validated/latency per bucket (per-bucket timings, or the one timing for all).
RegionMeasurement measurement_of(const emit::CompiledRegion& region, const std::vector<emit::Bucket>& buckets, bool per_bucket);

// The fastest validated candidate among `measured` at a bucket; -1: none.
int pick(const RegionMeasurement& region, size_t bucket, const std::vector<int>& measured);

struct AblationRow {
  std::string ordering;
  int budget = 0;                              // 0: all (exhaustive)
  int best_picks = 0, decisions = 0;           // (region, bucket) decisions whose pick is the best
  double mean_spent = 0;                       // candidates admitted per region
  std::map<std::string, double> latency_us;    // bucket -> sum over sites of the picks' latency
  std::map<std::string, double> best_us;       // bucket -> the same for the exhaustive best
  double regret_pct(const std::string& bucket) const;
  double total_regret_pct() const;
};

struct Decision {
  std::string region, bucket;
  int sites = 1;
  std::string best;
  double best_us = 0;
  std::map<std::string, std::string> picks;    // "advisor@2" -> candidate id
};

struct Ablation {
  std::vector<std::string> buckets;            // in first-seen order
  std::vector<AblationRow> rows;
  std::vector<Decision> decisions;
  size_t regions = 0;
};

// Orderings are evaluated at every budget; an ordering named "exhaustive" gets one row (all).
Ablation ablate(const std::vector<RegionMeasurement>& regions, const std::vector<std::string>& orderings,
                const std::vector<int>& budgets);

// The table as text (CLI and report.md) and as ablation.json.
std::string ablation_text(const Ablation& ablation);
nlohmann::json ablation_json(const Ablation& ablation);

// The orderings the ablation compares for a region: heuristic, advisor (region.search.order), random.
std::map<std::string, std::vector<int>> orderings_of(const emit::CompiledRegion& region, uint64_t seed);

// artifact.ablation and artifact.ablation_table from the exhaustive measurements; without a GPU, a
// record that nothing was measured. Either way with every region's orderings.
void record_ablation(emit::Artifact& artifact, const std::vector<RegionMeasurement>& measurements,
                     const SearchOptions& options, bool gpu);

}  // namespace agentcompile::search
