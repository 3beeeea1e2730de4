// tune::layer_unit: which regions the decode layer's chain times, from the plan region of each site.
// A model whose layers are all alike keeps what the older rule (the regions with the most sites) gave;
// a Gemma-3-like one (first layer's QKV its own region, sliding and global attention as two regions)
// gets its whole layer, attention and QKV included.
#include <gtest/gtest.h>

#include "tune/layer_chain.h"

namespace agentcompile::tune {
namespace {

const auto kAll = [](size_t) { return true; };

// Sites of `layers` layers of `body` between a `head` and a `tail`.
std::vector<int> sites(std::vector<int> head, const std::vector<std::vector<int>>& layers, const std::vector<int>& tail) {
  for (const auto& layer : layers) head.insert(head.end(), layer.begin(), layer.end());
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(LayerUnit, UniformLayersGiveTheRegionsWithTheMostSites) {
  // embedding 0; per layer: qkv 1, attention 2, o 3, gate/up 4, down 5; final norm + LM head 6.
  const std::vector<int> s = sites({0}, {{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}}, {6});
  const LayerUnit unit = layer_unit(s, kAll);
  EXPECT_EQ(unit.layers, 4u);
  EXPECT_EQ(unit.regions, (std::vector<size_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(unit.sites, (std::vector<int>{6, 7, 8, 9, 10}));
  EXPECT_EQ(unit.previous_sites, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(LayerUnit, LayersThatDifferKeepTheirAttentionAndProjections) {
  // Gemma-3-like: embedding 0, norm 1, the first layer's QKV 2 (no residual before its norm); per layer
  // attention (sliding 3, global 8), o 4, gate/up 5, down 6, then the next layer's QKV 7 (with the
  // residual add); the last layer ends in the LM head 9 instead.
  std::vector<std::vector<int>> layers;
  for (int layer = 0; layer < 6; ++layer) {
    const int attention = layer == 5 ? 8 : 3;
    layers.push_back(layer == 5 ? std::vector<int>{attention, 4, 5, 6} : std::vector<int>{attention, 4, 5, 6, 7});
  }
  const std::vector<int> s = sites({0, 1, 2}, layers, {9});
  const LayerUnit unit = layer_unit(s, kAll);
  EXPECT_EQ(unit.layers, 6u);
  // Between the o projection's second and third sites: o, gate/up, down, the next QKV and attention.
  EXPECT_EQ(unit.regions, (std::vector<size_t>{4, 5, 6, 7, 3}));
  // The same regions one layer before, for the residual links.
  ASSERT_EQ(unit.previous_sites.size(), unit.sites.size());
  for (size_t k = 0; k < unit.sites.size(); ++k) {
    EXPECT_EQ(s[static_cast<size_t>(unit.sites[k])], static_cast<int>(unit.regions[k]));
    EXPECT_EQ(s[static_cast<size_t>(unit.previous_sites[k])], static_cast<int>(unit.regions[k]));
    EXPECT_LT(unit.previous_sites[k], unit.sites[k]);
  }
}

TEST(LayerUnit, RegionsWithoutCandidatesAreLeftOut) {
  const std::vector<int> s = sites({0}, {{1, 2, 3}, {1, 2, 3}, {1, 2, 3}}, {4});
  const LayerUnit unit = layer_unit(s, [](size_t r) { return r != 2; });
  EXPECT_EQ(unit.regions, (std::vector<size_t>{1, 3}));
}

TEST(LayerUnit, ARegionTwiceInALayerFallsBackToTheRegionsWithTheMostSites) {
  // Norm region 1 runs twice per layer (before attention and before the MLP): its sites outnumber the
  // layers, so the anchor is region 1 and the span between its sites is half a layer; the narrower rule.
  const std::vector<int> s = sites({0}, {{1, 2, 1, 3}, {1, 2, 1, 3}, {1, 2, 1, 3}}, {4});
  const LayerUnit unit = layer_unit(s, kAll);
  EXPECT_EQ(unit.layers, 6u);
  EXPECT_EQ(unit.regions, (std::vector<size_t>{1}));
}

TEST(LayerUnit, TwoLayersOrFewerUseTheNarrowRule) {
  const std::vector<int> s = sites({0, 9}, {{3, 4, 5, 7}, {3, 4, 5}}, {8});
  const LayerUnit unit = layer_unit(s, kAll);
  EXPECT_EQ(unit.layers, 2u);
  EXPECT_EQ(unit.regions, (std::vector<size_t>{3, 4, 5}));
  EXPECT_TRUE(layer_unit({0, 1, 2}, kAll).regions.empty());  // no region repeats: no layer
}

}  // namespace
}  // namespace agentcompile::tune
