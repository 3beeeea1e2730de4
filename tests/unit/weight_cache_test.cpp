// The compile's weight cache: a key decides a weight's values, so a cached weight is exactly the one
// drawn without the cache; equal keys share one tensor, different keys get different draws; the
// cache stays under its bound. Over a model's regions: the embedding table is drawn once for prefill
// and decode (and the lm_head of the same shape), while a region's own weights stay distinct draws.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "model_fixtures.h"
#include "tune/region_cases.h"
#include "tune/weight_cache.h"

namespace agentcompile::tune {
namespace {

bool same_values(const TestTensor& a, const TestTensor& b) {
  return a.values.size() == b.values.size() && std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0 &&
         a.bytes == b.bytes;
}

TEST(WeightCache, EqualKeysShareOneTensorAndDifferentKeysDiffer) {
  WeightCache cache;
  const WeightKey key{ir::DType::kBF16, {64, 32}, false, 0};
  const auto first = cache.get(key);
  EXPECT_EQ(cache.get(key).get(), first.get());
  EXPECT_EQ(cache.draws(), 1u);
  EXPECT_TRUE(same_values(*first, draw_weight(key))) << "the cache must not change a weight's values";

  std::vector<WeightKey> others = {{ir::DType::kF16, {64, 32}, false, 0}, {ir::DType::kBF16, {32, 64}, false, 0},
                                   {ir::DType::kBF16, {64, 32}, true, 0}, {ir::DType::kBF16, {64, 32}, false, 1}};
  for (const WeightKey& other : others) {
    const auto tensor = cache.get(other);
    EXPECT_NE(tensor.get(), first.get());
    EXPECT_FALSE(std::memcmp(tensor->values.data(), first->values.data(), 64 * sizeof(float)) == 0) << "a different key must draw afresh";
  }
  EXPECT_EQ(cache.draws(), 5u);
  // Kinds keep their magnitudes: a norm's scale near 1, a matrix's entries about 1/sqrt(K).
  double norm_mean = 0, matrix_squares = 0;
  for (float v : cache.get(others[2])->values) norm_mean += v / 2048.0;
  for (float v : first->values) matrix_squares += static_cast<double>(v) * v / 2048.0;
  EXPECT_NEAR(norm_mean, 1.0, 0.05);
  EXPECT_NEAR(matrix_squares, 1.0 / 32.0, 0.01);
}

TEST(WeightCache, StaysUnderItsBoundLeastRecentlyUsedFirst) {
  const WeightKey a{ir::DType::kF32, {1000}, false, 0}, b{ir::DType::kF32, {1000}, false, 1}, c{ir::DType::kF32, {1000}, false, 2};
  const size_t one = 1000 * (4 + 4);  // values and bytes
  WeightCache cache(2 * one);
  const auto first_a = cache.get(a);
  cache.get(b);
  cache.get(a);  // a is now the most recent: c evicts b
  cache.get(c);
  EXPECT_EQ(cache.held_bytes(), 2 * one);
  EXPECT_EQ(cache.get(a).get(), first_a.get());
  EXPECT_EQ(cache.draws(), 3u);
  const auto b_again = cache.get(b);  // drawn again, to the same values
  EXPECT_EQ(cache.draws(), 4u);
  EXPECT_TRUE(same_values(*b_again, draw_weight(b)));
  EXPECT_LE(cache.held_bytes(), 2 * one);
  // Larger than the bound: drawn, not kept.
  const WeightKey big{ir::DType::kF32, {3000}, false, 0};
  cache.get(big);
  cache.get(big);
  EXPECT_EQ(cache.draws(), 6u);
  EXPECT_LE(cache.held_bytes(), 2 * one);
}

TEST(WeightCache, RegionsShareTheEmbeddingAndKeepTheirOwnWeightsDistinct) {
  const ir::Module module = fixtures::tiny_model("tiny-qwen3.json");
  WeightCache cache;
  std::map<const TestTensor*, int> regions_holding;  // tensor -> regions that hold it
  int regions = 0;
  for (const char* name : {"prefill", "decode"}) {
    const ir::Function& function = *module.find_function(name);
    const auto partition = analysis::form_regions(module, function);
    for (const auto& u : analysis::unique_regions(module, function, partition, {8, 64})) {
      auto region_module = analysis::extract_region(module, function, partition.regions[static_cast<size_t>(u.sites.front())]);
      ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
      auto layout = region_layout(*region_module, RegionBindings{8, 64, 0});
      ASSERT_TRUE(layout.has_value()) << layout.status().to_string();
      const RegionWeights cached = random_weights(*region_module, *layout, &cache);
      const RegionWeights fresh = random_weights(*region_module, *layout);
      ASSERT_EQ(cached.size(), layout->params.size());
      for (size_t p = 0; p < cached.size(); ++p) {
        SCOPED_TRACE(std::string(name) + ".r" + std::to_string(u.id) + " " + region_module->params[p].name);
        EXPECT_TRUE(same_values(*cached[p], *fresh[p])) << "a weight must not depend on the cache";
        for (size_t q = 0; q < p; ++q)
          EXPECT_FALSE(same_values(*cached[p], *cached[q])) << "two weights of one region must be distinct draws";
      }
      std::set<const TestTensor*> held;
      for (const auto& t : cached) held.insert(t.get());
      for (const TestTensor* t : held) ++regions_holding[t];
      ++regions;
    }
  }
  ASSERT_GT(regions, 6);
  // The [vocab, hidden] table: prefill's and decode's embedding and lm_head regions hold one tensor.
  int shared_table = 0;
  for (const auto& [tensor, count] : regions_holding)
    if (tensor->shape == std::vector<int64_t>{512, 64}) shared_table = std::max(shared_table, count);
  EXPECT_GE(shared_table, 4);
  EXPECT_EQ(cache.draws(), regions_holding.size()) << "every distinct weight is drawn once";
}

}  // namespace
}  // namespace agentcompile::tune
