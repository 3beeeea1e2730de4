// The search budget and the advisor ablation as pure functions: which candidates a budget admits
// (and the continuation when none validates), admission of a subset mapped back to the region, the
// rank and regret of selections, the seeded random order, and the ablation table derived from one
// table of measurements.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <set>

#include "tune/ablation.h"
#include "tune/search.h"

namespace agentcompile::tune {
namespace {

TEST(SearchBudget, PrefixContinuesUntilOneValidates) {
  const std::vector<int> order = {3, 1, 0, 2, 4};
  const std::vector<bool> valid = {true, false, false, false, true};  // c0 and c4 validate
  EXPECT_EQ(budget_prefix(order, valid, 2), (std::vector<int>{3, 1, 0}));  // c3, c1 fail: on to c0
  EXPECT_EQ(budget_prefix(order, valid, 3), (std::vector<int>{3, 1, 0}));
  EXPECT_EQ(budget_prefix(order, valid, 4), (std::vector<int>{3, 1, 0, 2}));
  EXPECT_EQ(budget_prefix(order, valid, 0), order);
  EXPECT_EQ(budget_prefix(order, valid, 99), order);
  EXPECT_EQ(budget_prefix(order, std::vector<bool>(5, false), 1), order);  // none validates: everything
}

// A region of `n` candidates c0..c(n-1), every one compiled.
struct Region {
  std::vector<plan::Candidate> candidates;
  std::vector<codegen::CompileResult> compiled;
  AdmittedRegion admitted;
};

Region region_of(size_t n) {
  Region region;
  for (size_t i = 0; i < n; ++i) {
    plan::Candidate c;
    c.id = "c" + std::to_string(i);
    region.candidates.push_back(c);
    codegen::CompileResult compiled;
    compiled.ok = true;
    region.compiled.push_back(compiled);
  }
  return region;
}

Status admit(Region& region, const AdmitFn& fn) { return admit_with_budget("decode.r6", region.candidates, region.compiled, region.admitted, fn); }

// Admits by a table: candidate id -> validated latency (absent: rejected); records every call.
struct FakeAdmission {
  std::map<std::string, double> latency;
  std::vector<std::vector<std::string>> calls;
  AdmitFn fn() {
    return [this](const std::vector<int>& indices) {
      std::vector<CandidateResult> results;
      calls.emplace_back();
      for (int i : indices) {
        const std::string id = "c" + std::to_string(i);  // as region_of names them
        calls.back().push_back(id);
        CandidateResult r;
        r.id = id;
        auto it = latency.find(id);
        r.validated = it != latency.end();
        r.measured = r.validated;
        if (r.validated) r.timings.push_back({{1, 512, 77}, it->second, it->second, it->second, 30, 1, 2});
        else r.rejection = "wrong numbers";
        results.push_back(r);
      }
      return Expected<std::vector<CandidateResult>>(results);
    };
  }
};

TEST(SearchBudget, AdmitsOnlyTheBudgetInOrderAndMapsResultsBack) {
  Region region = region_of(5);
  SearchRecord& search = region.admitted.search;
  search.order = {3, 1, 0, 2, 4};
  search.order_source = "advisor";
  search.budget = 2;
  FakeAdmission admission{{{"c1", 9.0}, {"c3", 7.0}, {"c4", 1.0}}, {}};
  ASSERT_TRUE(admit(region, admission.fn()).is_ok());
  ASSERT_EQ(admission.calls.size(), 1u);
  EXPECT_EQ(admission.calls[0], (std::vector<std::string>{"c3", "c1"}));
  EXPECT_EQ(search.measured, (std::vector<bool>{false, true, false, true, false}));
  EXPECT_EQ(search.spent, 2);
  EXPECT_FALSE(search.exhaustive);
  const auto& results = region.admitted.results;
  ASSERT_EQ(results.size(), 5u);
  EXPECT_TRUE(results[3].validated);
  EXPECT_DOUBLE_EQ(results[3].timings[0].median_us, 7.0);
  EXPECT_FALSE(results[4].validated);  // c4 would be fastest, but it is outside the budget
  EXPECT_TRUE(results[4].rejection.empty());
  EXPECT_EQ(results[4].id, "c4");

  // The selection of that bucket (c3) ranked first; regret unknown without the exhaustive set.
  const auto outcomes = selection_outcomes(search, results, {{"decode", 3, "fastest validated", true}}, false);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].rank, 1);
  EXPECT_FALSE(outcomes[0].regret.has_value());
}

TEST(SearchBudget, ContinuesOneAtATimeUntilOneValidates) {
  Region region = region_of(5);
  region.admitted.search.order = {3, 1, 0, 2, 4};
  region.admitted.search.budget = 2;
  FakeAdmission admission{{{"c2", 4.0}, {"c4", 1.0}}, {}};
  ASSERT_TRUE(admit(region, admission.fn()).is_ok());
  ASSERT_EQ(admission.calls.size(), 3u);
  EXPECT_EQ(admission.calls[1], std::vector<std::string>{"c0"});
  EXPECT_EQ(admission.calls[2], std::vector<std::string>{"c2"});
  EXPECT_EQ(region.admitted.search.spent, 4);
  EXPECT_NE(region.admitted.search.note.find("continued to 4 (c2 validated)"), std::string::npos) << region.admitted.search.note;
  EXPECT_FALSE(region.admitted.search.measured[4]);
}

TEST(SearchBudget, ExhaustiveSearchKnowsTheRegret) {
  Region region = region_of(3);
  region.admitted.search.budget = 0;  // all; no order given: heuristic
  FakeAdmission admission{{{"c0", 2.0}, {"c1", 1.0}, {"c2", 4.0}}, {}};
  ASSERT_TRUE(admit(region, admission.fn()).is_ok());
  EXPECT_EQ(region.admitted.search.order, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(region.admitted.search.exhaustive);
  const auto outcomes = selection_outcomes(region.admitted.search, region.admitted.results, {{"decode", 0, "pretend c0 was chosen", true}}, false);
  EXPECT_EQ(outcomes[0].rank, 1);
  ASSERT_TRUE(outcomes[0].regret.has_value());
  EXPECT_DOUBLE_EQ(*outcomes[0].regret, 1.0);  // 2 us vs the best 1 us
}

TEST(SearchRandomOrder, IsADeterministicSeededPermutation) {
  const auto a = random_order(8, 7, "decode.r6");
  EXPECT_EQ(a, random_order(8, 7, "decode.r6"));
  EXPECT_EQ(std::set<int>(a.begin(), a.end()).size(), 8u);
  EXPECT_NE(a, random_order(8, 8, "decode.r6"));
  EXPECT_NE(a, random_order(8, 7, "decode.r5"));
  EXPECT_TRUE(random_order(0, 1, "x").empty());
}

// Two regions; "decode.r6" (3 sites) has one bucket, "prefill.r2" (2 sites) two.
std::vector<RegionMeasurement> table() {
  RegionMeasurement decode;
  decode.region = "decode.r6";
  decode.sites = 3;
  decode.ids = {"c0", "c1", "c2", "c3"};
  decode.buckets = {"decode"};
  decode.validated = {true, true, false, true};
  decode.latency_us = {{10, 6, NAN, 8}};
  decode.orders = {{"heuristic", {0, 1, 2, 3}}, {"advisor", {2, 1, 0, 3}}, {"random", {3, 2, 0, 1}}};
  RegionMeasurement prefill;
  prefill.region = "prefill.r2";
  prefill.sites = 2;
  prefill.ids = {"c0", "c1", "c2"};
  prefill.buckets = {"t1-64", "t65-512"};
  prefill.validated = {true, true, true};
  prefill.latency_us = {{5, 4, 6}, {50, 60, 40}};
  prefill.orders = {{"heuristic", {0, 1, 2}}, {"advisor", {2, 0, 1}}, {"random", {1, 2, 0}}};
  return {decode, prefill};
}

const AblationRow& row(const Ablation& a, const std::string& ordering, int budget) {
  for (const auto& r : a.rows)
    if (r.ordering == ordering && r.budget == budget) return r;
  throw std::runtime_error("no row " + ordering);
}

TEST(SearchAblation, DerivesEveryOrderingsPicksFromOneMeasurement) {
  const Ablation a = ablate(table(), {"heuristic", "advisor", "random", "exhaustive"}, {1, 2});
  EXPECT_EQ(a.buckets, (std::vector<std::string>{"decode", "t1-64", "t65-512"}));
  EXPECT_EQ(a.regions, 2u);
  ASSERT_EQ(a.rows.size(), 7u);  // 3 orderings x 2 budgets + exhaustive

  // Exhaustive: decode c1 (6 us x 3 sites), t1-64 c1 (4 x 2), t65-512 c2 (40 x 2).
  const AblationRow& best = row(a, "exhaustive", 0);
  EXPECT_EQ(best.best_picks, 3);
  EXPECT_EQ(best.decisions, 3);
  EXPECT_DOUBLE_EQ(best.latency_us.at("decode"), 18);
  EXPECT_DOUBLE_EQ(best.latency_us.at("t1-64"), 8);
  EXPECT_DOUBLE_EQ(best.latency_us.at("t65-512"), 80);
  EXPECT_DOUBLE_EQ(best.total_regret_pct(), 0);
  EXPECT_DOUBLE_EQ(best.mean_spent, 3.5);

  // Heuristic at 1: c0 everywhere: 10 x 3, 5 x 2, 50 x 2 = 140 vs 106.
  const AblationRow& h1 = row(a, "heuristic", 1);
  EXPECT_EQ(h1.best_picks, 0);
  EXPECT_DOUBLE_EQ(h1.latency_us.at("decode"), 30);
  EXPECT_NEAR(h1.regret_pct("decode"), 100.0 * (30.0 / 18 - 1), 1e-9);
  EXPECT_NEAR(h1.total_regret_pct(), 100.0 * (140.0 / 106 - 1), 1e-9);

  // Advisor at 1: decode's first choice c2 does not validate, so c1 is admitted too (the best);
  // prefill c2: best at t65-512, not at t1-64.
  const AblationRow& a1 = row(a, "advisor", 1);
  EXPECT_EQ(a1.best_picks, 2);
  EXPECT_DOUBLE_EQ(a1.latency_us.at("decode"), 18);
  EXPECT_DOUBLE_EQ(a1.latency_us.at("t1-64"), 12);
  EXPECT_DOUBLE_EQ(a1.mean_spent, 1.5);
  // Advisor at 2: prefill c2, c0 -> t1-64 picks c0 (5), still not c1.
  EXPECT_DOUBLE_EQ(row(a, "advisor", 2).latency_us.at("t1-64"), 10);

  // Random at 2: decode {c3, c2} -> c3 (8); prefill {c1, c2} -> c1, c2: both best.
  const AblationRow& r2 = row(a, "random", 2);
  EXPECT_EQ(r2.best_picks, 2);
  EXPECT_DOUBLE_EQ(r2.latency_us.at("decode"), 24);

  ASSERT_EQ(a.decisions.size(), 3u);
  EXPECT_EQ(a.decisions[0].best, "c1");
  EXPECT_EQ(a.decisions[0].picks.at("advisor@1"), "c1");
  EXPECT_EQ(a.decisions[0].picks.at("heuristic@1"), "c0");
  EXPECT_EQ(a.decisions[2].picks.at("exhaustive@all"), "c2");

  const std::string text = ablation_text(a);
  EXPECT_NE(text.find("ONE exhaustive measurement"), std::string::npos) << text;
  EXPECT_NE(text.find("heuristic   1"), std::string::npos) << text;
  const nlohmann::json j = ablation_json(a);
  EXPECT_EQ(j["rows"].size(), 7u);
  EXPECT_EQ(j["rows"][6]["budget"], "all");
}

TEST(SearchAblation, RegionsWithoutAValidatedCandidateAreLeftOut) {
  auto regions = table();
  regions[0].validated.assign(4, false);
  const Ablation a = ablate(regions, {"heuristic"}, {1});
  EXPECT_EQ(a.regions, 1u);
  EXPECT_EQ(a.rows[0].decisions, 2);
  EXPECT_EQ(a.rows[0].latency_us.count("decode"), 0u);
}

}  // namespace
}  // namespace agentcompile::tune
