// Buckets and validation sizes of a captured module's function whose batch dim is T (plan/sizes.h):
// one bucket at the size it was captured at; regions that follow T are validated at a smaller odd T that
// keeps the CPU reference cheap; language-model functions keep their sizes.
#include <gtest/gtest.h>

#include "plan/sizes.h"

namespace agentcompile {
namespace {

analysis::RegionSummary following_T(double bytes, double flops) {
  analysis::RegionSummary summary;
  summary.depends_on_T = true;
  summary.bytes = bytes;
  summary.flops = flops;
  return summary;
}

TEST(ModuleBuckets, OneBucketAtTheCapturedSize) {
  ir::Function forward;
  forward.name = "forward";
  const auto buckets = plan::buckets_for(forward, 0, 4096);
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(buckets[0].min_tokens, 4096);
  EXPECT_EQ(buckets[0].max_tokens, 4096);
  EXPECT_EQ(buckets[0].timing_tokens, 4096);
  EXPECT_FALSE(buckets[0].bounds_context());
  EXPECT_EQ(plan::buckets_for(forward, 0).front().max_tokens, 1);  // static shapes
}

TEST(ModuleBuckets, ValidatedAtTheLargestCheapOddSize) {
  // ReLU over [4096, 393216] f32: 3 MiB a row in and out; 256 MiB allow 85 rows -> 67.
  const double row_bytes = 393216.0 * 4 * 2;
  EXPECT_EQ(plan::validation_bindings("forward", following_T(row_bytes * 4096, 393216.0 * 4096), 4096).T, 67);
  // A [T, 4096] x [4096, 4096] product: 8 GFLOP allow 238 rows -> 131.
  const double flops = 2.0 * 4096 * 4096;
  EXPECT_EQ(plan::validation_bindings("forward", following_T(64e6 + 32768.0 * 4096, flops * 4096), 4096).T, 131);
  // Small rows: the largest size on the ladder under the captured one.
  EXPECT_EQ(plan::validation_bindings("forward", following_T(1e3 * 4096, 1e3 * 4096), 4096).T, 259);
  EXPECT_EQ(plan::validation_bindings("forward", following_T(1e3 * 100, 1e3 * 100), 100).T, 67);
  EXPECT_EQ(plan::validation_bindings("forward", following_T(1e3 * 5, 1e3 * 5), 5).T, 3);
  // Rows too large for any rung still run at 3 (two past a tile edge) rather than at the full size.
  EXPECT_EQ(plan::validation_bindings("forward", following_T(1e9 * 4096, 1e9 * 4096), 4096).T, 3);
  // Tiny batches run as captured.
  EXPECT_EQ(plan::validation_bindings("forward", following_T(1e3 * 3, 1e3 * 3), 3).T, 3);
}

TEST(ModuleBuckets, RegionsThatDoNotFollowTAndLanguageModelsKeepTheirSizes) {
  analysis::RegionSummary fixed;
  EXPECT_EQ(plan::validation_bindings("forward", fixed, 4096).T, 4096);
  EXPECT_EQ(plan::validation_bindings("forward", fixed, 1).T, 1);
  const auto prefill = plan::validation_bindings("prefill", following_T(1e9, 1e12), 1);
  EXPECT_EQ(prefill.T, 100);
  EXPECT_EQ(prefill.pos, 28);
  const auto decode = plan::validation_bindings("decode", analysis::RegionSummary{}, 1);
  EXPECT_EQ(decode.T, 1);
  EXPECT_EQ(decode.L, 512);
}

}  // namespace
}  // namespace agentcompile
