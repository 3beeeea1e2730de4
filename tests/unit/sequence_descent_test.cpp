// The descent of tune/sequence_timing.h on synthetic layers (no GPU): it moves a pick only where the
// whole unit gets faster by more than the noise margin, finds pairs of neighbouring picks that only
// pay together (the last step's neighbour being the first), times each assignment once, keeps the
// start when the result does not hold up when timed again, and refuses malformed starts.
#include <gtest/gtest.h>

#include <map>

#include "tune/sequence_timing.h"

namespace agentcompile::tune {
namespace {

TEST(SequenceDescent, MovesAPickOnlyWhenTheUnitGetsFaster) {
  // Step 0's alternative 2 saves 1 us; step 1's alternative 1 saves 0.01 us, under the 0.3% margin.
  const UnitTimer timer = [](const std::vector<int>& c) -> Expected<double> {
    return 30.0 - (c[0] == 2 ? 1.0 : 0.0) - (c[1] == 1 ? 0.01 : 0.0);
  };
  auto r = descend({3, 2}, {0, 0}, timer, SequenceOptions{});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->best, (std::vector<int>{2, 0}));
  EXPECT_DOUBLE_EQ(r->start_us, 30.0);
  EXPECT_DOUBLE_EQ(r->best_us, 29.0);
  EXPECT_GE(r->trials.size(), 4u);
}

TEST(SequenceDescent, SecondPassFindsWhatTheFirstChangeEnabled) {
  // Alternative 1 of step 0 pays only once step 1 is at alternative 1, which pays on its own.
  const UnitTimer timer = [](const std::vector<int>& c) -> Expected<double> {
    double us = 30.0;
    if (c[1] == 1) us -= 1.0;
    if (c[0] == 1) us += c[1] == 1 ? -1.0 : 0.5;
    return us;
  };
  auto r = descend({2, 2}, {0, 0}, timer, SequenceOptions{});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->best, (std::vector<int>{1, 1}));
  EXPECT_DOUBLE_EQ(r->best_us, 28.0);
}

TEST(SequenceDescent, FindsNeighbourPairsThatPayOnlyTogether) {
  // Four steps. Steps 1 and 2 at alternative 2 save 1 us together and cost 0.5 us each alone; so do
  // the last step and the first (the next layer's). A one-step descent stays at the start.
  const UnitTimer timer = [](const std::vector<int>& c) -> Expected<double> {
    double us = 30.0;
    us += c[1] == 2 && c[2] == 2 ? -1.0 : (c[1] == 2 || c[2] == 2 ? 0.5 : 0.0);
    us += c[3] == 1 && c[0] == 1 ? -1.0 : (c[3] == 1 || c[0] == 1 ? 0.5 : 0.0);
    return us;
  };
  auto r = descend({2, 3, 3, 2}, {0, 0, 0, 0}, timer, SequenceOptions{});
  ASSERT_TRUE(r.has_value()) << r.status().to_string();
  EXPECT_EQ(r->best, (std::vector<int>{1, 2, 2, 1}));
  EXPECT_DOUBLE_EQ(r->best_us, 28.0);
  // Each assignment once, besides the start and the result timed again at the end.
  std::map<std::vector<int>, int> times;
  for (const auto& t : r->trials) ++times[t.choice];
  for (const auto& [choice, count] : times) EXPECT_LE(count, 2) << "an assignment was timed " << count << " times";
  EXPECT_EQ(times[std::vector<int>({0, 0, 0, 0})], 2);
  EXPECT_EQ(times[std::vector<int>({1, 2, 2, 1})], 2);
}

TEST(SequenceDescent, KeepsTheStartWhenTheGainDoesNotHoldUp) {
  // Noise: the first timing of {1} looks fast; every later timing of it is as slow as the start.
  std::map<std::vector<int>, int> seen;
  const UnitTimer timer = [&](const std::vector<int>& c) -> Expected<double> {
    const int n = seen[c]++;
    return c[0] == 1 && n == 0 ? 29.0 : 30.0;
  };
  auto r = descend({2}, {0}, timer, SequenceOptions{});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->best, (std::vector<int>{0}));
  EXPECT_DOUBLE_EQ(r->best_us, r->start_us);
}

TEST(SequenceDescent, RefusesAStartOutsideTheAlternativesAndPassesTimerErrorsOn) {
  const UnitTimer timer = [](const std::vector<int>&) -> Expected<double> { return 1.0; };
  EXPECT_FALSE(descend({2, 2}, {0}, timer, SequenceOptions{}).has_value());
  EXPECT_FALSE(descend({2}, {2}, timer, SequenceOptions{}).has_value());
  const UnitTimer failing = [](const std::vector<int>&) -> Expected<double> { return error(ErrorCode::kInternal, "kernel faulted"); };
  auto r = descend({2}, {0}, failing, SequenceOptions{});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.status().message().find("kernel faulted"), std::string::npos);
}

}  // namespace
}  // namespace agentcompile::tune
