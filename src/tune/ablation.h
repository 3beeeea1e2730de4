// The advisor ablation: every candidate is measured once (exhaustive); from that one table of
// measurements, each ordering (heuristic, advisor, seeded random, exhaustive) is replayed at each
// budget (search.h): what it would have admitted, what it would have picked per bucket, and how much
// slower that is than the exhaustive best, summed over every site of every region. Nothing is
// re-measured per ordering.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/compiler.h"
#include "plan/candidate.h"
#include "plan/sizes.h"
#include "tune/admission.h"

namespace agentcompile::tune {

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

// From a measured region (`sites` of it in its function, a result per candidate): validated/latency per
// bucket (per-bucket timings, or the one timing for all).
RegionMeasurement measurement_of(const std::string& region, int sites, const std::vector<plan::Candidate>& candidates,
                                 const std::vector<CandidateResult>& results, const std::vector<plan::Bucket>& buckets, bool per_bucket);

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

// The orderings the ablation compares for a region of `candidates` candidates: heuristic, advisor
// (`advised`, the region's measuring order), random.
std::map<std::string, std::vector<int>> orderings_of(const std::string& region, size_t candidates, const std::vector<int>& advised,
                                                     uint64_t seed);

// A region's orderings by candidate id, for ablation.json (every region, measured or not).
struct RegionOrders {
  std::string region;
  std::vector<std::string> ids;                    // candidate ids
  std::map<std::string, std::vector<int>> orders;  // orderings_of()
};

// ablation.json and the table (report.md and the CLI).
struct AblationRecord {
  nlohmann::json json;
  std::string table;
};

// The ablation from the exhaustive measurements; without a GPU, a record that nothing was measured.
// Either way with every region's orderings. `advisor` is the advisor's part of the compile's options.
AblationRecord record_ablation(const std::vector<RegionOrders>& orders, const std::vector<RegionMeasurement>& measurements,
                               const SearchOptions& options, const nlohmann::json& advisor, bool gpu);

}  // namespace agentcompile::tune
