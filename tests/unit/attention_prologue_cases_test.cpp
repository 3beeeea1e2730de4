// The decode attention region that opens with its token's QK-norm / RoPE / KV append, as admission
// sees it without a GPU: it extracts into a standalone module, and the reference cases the kernels
// are checked against append exactly one cache row (the value row as it came in, the key row
// rotated) and leave every other row alone; against the unfused cut, the fused region takes over the
// cache writes and hands on the same value.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "model_fixtures.h"
#include "tune/region_cases.h"

namespace agentcompile {
namespace {

using fixtures::tiny_model;

const analysis::Region* first_attention(const analysis::RegionPartition& partition) {
  for (const auto& region : partition.regions)
    if (region.kind == analysis::RegionKind::kAttention) return &region;
  return nullptr;
}

TEST(AttentionPrologueCases, AppendOneRowAndLeaveTheRestOfTheCache) {
  for (const char* model : {"tiny-qwen3.json", "tiny-llama.json"}) {
    SCOPED_TRACE(model);
    const ir::Module module = tiny_model(model);
    const ir::Function& decode = *module.find_function("decode");
    const auto partition = analysis::form_regions(module, decode);
    const analysis::Region* region = first_attention(partition);
    ASSERT_NE(region, nullptr);
    ASSERT_GT(region->nodes.size(), 1u) << "the decode attention should open with its prologue";
    auto region_module = analysis::extract_region(module, decode, *region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    const tune::RegionBindings bindings{1, 64, 20};
    auto cases = tune::build_region_cases(*region_module, bindings, 2, {tune::Distribution::kNormal});
    ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
    ASSERT_EQ(region_module->states.size(), 2u);
    for (const auto& c : *cases) {
      ASSERT_EQ(c.expected_states.size(), 2u);
      for (size_t s = 0; s < 2; ++s) {
        const auto& before = c.states[s].values;
        const auto& after = c.expected_states[s].values;
        ASSERT_EQ(before.size(), after.size());
        const size_t row = before.size() / static_cast<size_t>(bindings.L);
        for (size_t i = 0; i < before.size(); ++i) {
          if (i / row == static_cast<size_t>(bindings.pos)) continue;
          ASSERT_EQ(before[i], after[i]) << "state " << s << " changed outside row pos at element " << i;
        }
        bool row_written = false;
        for (size_t i = bindings.pos * row; i < (bindings.pos + 1) * row; ++i) row_written |= before[i] != after[i];
        EXPECT_TRUE(row_written) << "state " << s << ": row pos was not appended";
      }
      ASSERT_EQ(c.expected_outputs.size(), 1u);
      for (float v : c.expected_outputs[0].values) ASSERT_TRUE(std::isfinite(v));
    }
  }
}

// Against the unfused cut of the same graph: the fused attention region takes over the rope_kv
// region's cache writes and leaves the same value (the attention's output) to the rest of the graph.
TEST(AttentionPrologueCases, FusedRegionTakesOverTheCacheWrites) {
  const ir::Module module = tiny_model("tiny-qwen3.json");
  const ir::Function& decode = *module.find_function("decode");
  const auto fused = analysis::form_regions(module, decode);
  const auto unfused = analysis::form_regions(module, decode, analysis::RegionOptions{.attention_prologue = false});
  EXPECT_LT(fused.regions.size(), unfused.regions.size());
  const analysis::Region* f = first_attention(fused);
  const analysis::Region* u = first_attention(unfused);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(f->states.size(), 2u);
  EXPECT_TRUE(u->states.empty());
  EXPECT_EQ(f->outputs, u->outputs);
  EXPECT_EQ(f->nodes.back(), u->nodes.back());
}

}  // namespace
}  // namespace agentcompile
