// The chain timing's links (tune/layer_chain.h): in a decode layer of the tiny Qwen3 and Llama
// models, each region reads the activations the regions before it wrote, found through views, and
// the layer's first regions read the residual stream the previous layer's last region wrote.
#include <gtest/gtest.h>

#include "analysis/regions.h"
#include "analysis/views.h"
#include "tune/layer_chain.h"
#include "model_fixtures.h"

namespace agentcompile {
namespace {

using fixtures::tiny_model;

bool reads(const std::vector<tune::SequenceLink>& links, int from_step, bool previous_layer) {
  for (const auto& link : links)
    if (link.from_step == from_step && link.previous_copy == previous_layer) return true;
  return false;
}

TEST(LayerLinks, EachRegionReadsWhatTheRegionsBeforeItWrote) {
  for (const char* model : {"tiny-qwen3.json", "tiny-llama.json"}) {
    SCOPED_TRACE(model);
    const ir::Module module = tiny_model(model);
    const ir::Function& decode = *module.find_function("decode");
    const auto partition = analysis::form_regions(module, decode);
    // A layer: the QKV projection before the attention, through the down projection before the next
    // layer's QKV projection.
    std::vector<size_t> attention;
    for (const auto& region : partition.regions)
      if (region.kind == analysis::RegionKind::kAttention) attention.push_back(static_cast<size_t>(region.index));
    ASSERT_GE(attention.size(), 2u);
    const size_t period = attention[1] - attention[0];
    ASSERT_EQ(period, 5u) << "QKV, attention, o_proj, gate/up, down";
    std::vector<const analysis::Region*> first, second;
    for (size_t k = 0; k < period; ++k) {
      first.push_back(&partition.regions[attention[0] - 1 + k]);
      second.push_back(&partition.regions[attention[1] - 1 + k]);
    }
    const ir::SymbolBindings at{1, 64};
    const auto links = tune::layer_links(decode, first, second, at);
    ASSERT_EQ(links.size(), period);
    EXPECT_TRUE(reads(links[0], 4, true)) << "QKV reads the hidden state the previous layer's down projection wrote";
    EXPECT_TRUE(reads(links[1], 0, false)) << "attention reads the query, key and value rows";
    EXPECT_TRUE(reads(links[2], 1, false)) << "o_proj reads the attention output";
    EXPECT_TRUE(reads(links[2], 4, true)) << "o_proj adds the residual the previous layer wrote";
    EXPECT_TRUE(reads(links[3], 2, false)) << "gate/up reads o_proj's output";
    EXPECT_TRUE(reads(links[4], 3, false)) << "down reads the activation";
    EXPECT_TRUE(reads(links[4], 2, false)) << "down adds the residual o_proj wrote";
    // Every linked input fits inside the output it is bound to, at its view's offset.
    for (size_t k = 0; k < period; ++k)
      for (const auto& link : links[k]) {
        const ir::ValueId input = second[k]->inputs[static_cast<size_t>(link.input)];
        const auto& writer = link.previous_copy ? first[static_cast<size_t>(link.from_step)] : second[static_cast<size_t>(link.from_step)];
        const ir::ValueId output = writer->outputs[static_cast<size_t>(link.output)];
        EXPECT_LE(link.byte_offset + analysis::value_bytes(decode, input, at), analysis::value_bytes(decode, output, at))
            << "step " << k << " input " << link.input;
      }
    // The attention's position is a function argument: no region writes it.
    size_t unlinked = 0;
    for (size_t k = 0; k < period; ++k) unlinked += second[k]->inputs.size() - links[k].size();
    EXPECT_GE(unlinked, 1u);
  }
}

// With the attention prologue cut off (--unfused), a region of its own appends the KV rows and the
// attention reads the caches: those stay each copy's own, while the query is still linked.
TEST(LayerLinks, KvCacheRowsAreNotLinked) {
  const ir::Module module = tiny_model("tiny-qwen3.json");
  const ir::Function& decode = *module.find_function("decode");
  const auto partition = analysis::form_regions(module, decode, analysis::RegionOptions{.attention_prologue = false});
  std::vector<size_t> attention;
  for (const auto& region : partition.regions)
    if (region.kind == analysis::RegionKind::kAttention) attention.push_back(static_cast<size_t>(region.index));
  ASSERT_GE(attention.size(), 2u);
  const size_t period = attention[1] - attention[0];
  ASSERT_EQ(period, 6u) << "QKV, QK-norm / RoPE / KV append, attention, o_proj, gate/up, down";
  std::vector<const analysis::Region*> first, second;
  for (size_t k = 0; k < period; ++k) {
    first.push_back(&partition.regions[attention[0] - 2 + k]);
    second.push_back(&partition.regions[attention[1] - 2 + k]);
  }
  const ir::SymbolBindings at{1, 64};
  const auto links = tune::layer_links(decode, first, second, at);
  const size_t step = 2;  // the attention
  size_t cache_inputs = 0;
  for (size_t i = 0; i < second[step]->inputs.size(); ++i) {
    const auto resolved = analysis::resolve_value(decode, second[step]->inputs[i], at);
    ASSERT_TRUE(resolved.has_value());
    const int producer = decode.value(resolved->root).producer;
    if (producer < 0 || decode.nodes[static_cast<size_t>(producer)].op != ir::OpKind::kKvAppend) continue;
    ++cache_inputs;
    for (const auto& link : links[step]) EXPECT_NE(link.input, static_cast<int>(i)) << "a KV cache input was linked";
  }
  EXPECT_EQ(cache_inputs, 2u) << "the attention reads the key and the value cache";
  EXPECT_TRUE(reads(links[step], 1, false)) << "the attention still reads the rotated query";
}

}  // namespace
}  // namespace agentcompile
