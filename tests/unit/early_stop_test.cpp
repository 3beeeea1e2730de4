// The early-stop rule of admission timing (tune/admission_steps.h) without a GPU: a candidate stops
// only when even its fastest screening sample is more than the margin behind the best median so far,
// never without a best, never with the margin off; the margin sits above the decode chain's slack,
// so a candidate that stopped could not have been one of the chain's alternatives either.
#include <gtest/gtest.h>

#include "agentcompile/compiler.h"
#include "tune/layer_chain.h"
#include "tune/admission.h"
#include "tune/admission_steps.h"
#include "tune/tuning_db.h"

namespace agentcompile::tune {
namespace {

TEST(EarlyStop, OnlyWhenEvenTheFastestSampleIsClearlyBehind) {
  const double best = 10.0, margin = 0.25;  // the bar is 12.5 us
  EXPECT_TRUE(clearly_behind({13.0, 14.0, 20.0, 13.5, 12.6}, best, margin));
  EXPECT_FALSE(clearly_behind({13.0, 14.0, 20.0, 12.4, 13.5}, best, margin)) << "one fast sample keeps it going";
  EXPECT_FALSE(clearly_behind({12.5, 12.5, 12.5}, best, margin)) << "at the bar is not behind it";
  EXPECT_FALSE(clearly_behind({9.0, 30.0, 30.0, 30.0, 30.0}, best, margin)) << "a median far behind, a minimum ahead: timed in full";
  EXPECT_FALSE(clearly_behind({}, best, margin));
  EXPECT_FALSE(clearly_behind({100.0}, 0.0, margin)) << "no best yet: the first candidate is always timed in full";
  EXPECT_FALSE(clearly_behind({100.0}, best, 0.0)) << "margin 0 turns early stop off";
  EXPECT_TRUE(clearly_behind({15.1}, best, 0.5));
  EXPECT_FALSE(clearly_behind({14.9}, best, 0.5));
}

TEST(EarlyStop, DefaultsAgreeAndSitAboveTheChainSlack) {
  EXPECT_DOUBLE_EQ(CompileOptions{}.early_stop_margin, kEarlyStopMargin);
  EXPECT_DOUBLE_EQ(AdmitOptions{}.early_stop_margin, kEarlyStopMargin);
  EXPECT_GT(kEarlyStopMargin, tune::kAlternativeSlack);
  EXPECT_GT(AdmitOptions{}.screen_samples, 0);
  EXPECT_LT(AdmitOptions{}.screen_samples, AdmitOptions{}.repetitions);
}

TEST(EarlyStop, AStoredStoppedTimingStandsOnlyWhileStillBehind) {
  Timing full;
  full.median_us = 50;
  EXPECT_TRUE(stored_timing_stands(full, 10, 0.25)) << "a full timing always stands";
  EXPECT_TRUE(stored_timing_stands(full, 0, 0.25));
  Timing stopped;
  stopped.stopped_early = true;
  stopped.median_us = 15;
  stopped.fastest_us = 14;
  stopped.stop_bar_us = 10;
  EXPECT_TRUE(stored_timing_stands(stopped, 10, 0.25));
  EXPECT_TRUE(stored_timing_stands(stopped, 8, 0.25)) << "a faster best only puts it further behind";
  EXPECT_FALSE(stored_timing_stands(stopped, 12, 0.25)) << "this compile's best is slower than the one it was stopped against";
  EXPECT_FALSE(stored_timing_stands(stopped, 0, 0.25)) << "nothing to be behind";
  EXPECT_FALSE(stored_timing_stands(stopped, 10, 0.0)) << "early stop off: measure in full";
}

TEST(EarlyStop, TheTimingRecordKeepsTheMargin) {
  Timing t;
  t.bindings = {1, 3072, 2047};
  t.median_us = 15;
  t.stopped_early = true;
  t.fastest_us = 14;
  t.stop_bar_us = 10;
  t.repetitions = 5;
  auto back = timing_from_json(timing_json(t));
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_TRUE(back->stopped_early);
  EXPECT_DOUBLE_EQ(back->fastest_us, 14);
  EXPECT_DOUBLE_EQ(back->stop_bar_us, 10);
  EXPECT_EQ(back->bindings.L, 3072);
  EXPECT_EQ(back->bindings.pos, 2047);
  EXPECT_EQ(back->repetitions, 5);
  EXPECT_FALSE(timing_from_json(nlohmann::json{{"median_us", "fast"}}).has_value()) << "the wrong type is an error, not an abort";
  EXPECT_FALSE(timing_from_json(nlohmann::json::array()).has_value());
}

}  // namespace
}  // namespace agentcompile::tune
