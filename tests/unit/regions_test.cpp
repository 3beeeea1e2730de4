// Region formation and summaries on the real Qwen3-1.7B and Llama-3.2-1B graphs (golden listings),
// plus the rules that must hold on any graph: convexity, side effects last (or read only by the
// decode attention they open), one region per node.
#include <gtest/gtest.h>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "model_fixtures.h"
#include "golden.h"
#include "ir/decode_batch.h"
#include "ir/text.h"

namespace agentcompile {
namespace {

ir::Module build(const std::string& config_name) { return fixtures::module_from_config("configs/" + config_name); }

std::string listing(const ir::Module& module, const std::string& function_name, ir::SymbolBindings bindings) {
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, bindings);
  return analysis::describe_regions(function, partition, unique);
}

TEST(Regions, Qwen3Golden) {
  ir::Module module = build("qwen3-1.7b.json");
  testing::expect_golden("regions_qwen3_decode.txt", listing(module, "decode", {1, 2048}));
  testing::expect_golden("regions_qwen3_prefill.txt", listing(module, "prefill", {512, 512}));
}

// decode_batch (ir/decode_batch.h) at a batch of 16 rows: the decode layer's regions, each row its own sequence.
TEST(Regions, Qwen3DecodeBatchGolden) {
  ir::Module module = build("qwen3-1.7b.json");
  ASSERT_TRUE(ir::add_decode_batch(module).is_ok());
  testing::expect_golden("regions_qwen3_decode_batch.txt", listing(module, ir::kDecodeBatchFunction, {16, 2048}));
}

TEST(Regions, LlamaGolden) {
  ir::Module module = build("llama-3.2-1b.json");
  testing::expect_golden("regions_llama_decode.txt", listing(module, "decode", {1, 2048}));
  testing::expect_golden("regions_llama_prefill.txt", listing(module, "prefill", {512, 512}));
}

TEST(Regions, EveryComputeNodeInExactlyOneConvexRegion) {
  for (const char* name : {"qwen3-1.7b.json", "llama-3.2-1b.json"}) {
    ir::Module module = build(name);
    for (const auto& function : module.functions) {
      auto partition = analysis::form_regions(module, function);
      int last_region = -1;
      for (size_t i = 0; i < function.nodes.size(); ++i) {
        const auto& node = function.nodes[i];
        const int region = partition.region_of_node[i];
        if (node.op == ir::OpKind::kWeight || analysis::is_view_node(node)) {
          EXPECT_EQ(region, -1);
          continue;
        }
        ASSERT_GE(region, 0) << "node " << i << " has no region";
        // Regions are contiguous runs of the node order, which makes each convex.
        EXPECT_GE(region, last_region) << name << " " << function.name << " node " << i;
        last_region = region;
      }
      for (const auto& region : partition.regions) {
        bool seen_effect = false;
        for (size_t i = 0; i < region.nodes.size(); ++i) {
          const ir::Node& node = function.nodes[static_cast<size_t>(region.nodes[i])];
          const bool effect = ir::has_side_effect(node.op);
          // The one exception: a one-token attention that closes its own prologue.
          const bool closing_attention = region.kind == analysis::RegionKind::kAttention && i + 1 == region.nodes.size() &&
                                         function.type(node.operands[0]).shape[0].value == 1;
          EXPECT_FALSE(seen_effect && !effect && !closing_attention) << "a region reaches across a side effect in " << function.name;
          seen_effect |= effect;
        }
      }
    }
  }
}

TEST(Regions, DecodeLayersShareUniqueRegions) {
  ir::Module module = build("qwen3-1.7b.json");
  const ir::Function& decode = *module.find_function("decode");
  auto partition = analysis::form_regions(module, decode);
  auto unique = analysis::unique_regions(module, decode, partition, {1, 2048});
  // Per layer: norm+fused QKV, qk-norm+rope+kv append+attention, o_proj+residual,
  // norm+gate/up+silu*mul, down+residual; plus embedding and final norm+lm_head: 7 to tune.
  EXPECT_EQ(partition.regions.size(), 28u * 5u + 2u);
  EXPECT_EQ(unique.size(), 7u);
  int qkv = 0;
  for (const auto& entry : unique) {
    const auto& ops = entry.summary.op_sequence;
    EXPECT_NE(ops, std::vector<std::string>{"rmsnorm"}) << "a decode norm left alone";
    if (ops == std::vector<std::string>{"rmsnorm", "linear", "linear", "linear"}) {
      ++qkv;
      EXPECT_EQ(entry.summary.category, analysis::Category::kGemvEpilogue);
      EXPECT_EQ(entry.sites.size(), 28u);  // norm + fused QKV at every layer
      EXPECT_EQ(entry.summary.params.size(), 4u);  // the norm weight and q, k, v
    }
  }
  EXPECT_EQ(qkv, 1);
}

TEST(Regions, NormPrologueOnlyForOneTokenAndCanBeTurnedOff) {
  ir::Module module = build("qwen3-1.7b.json");
  const ir::Function& decode = *module.find_function("decode");
  // Without norm prologues: every layer's two norms are regions of their own, as is the final norm;
  // all 57 share one signature.
  auto unfused = analysis::form_regions(module, decode, analysis::RegionOptions{.norm_prologue = false});
  EXPECT_EQ(unfused.regions.size(), 28u * 7u + 3u);
  EXPECT_EQ(analysis::unique_regions(module, decode, unfused, {1, 2048}).size(), 8u);
  // Without matmul fusion as well, every linear stands alone and its epilogue is a fusion region.
  auto bare = analysis::form_regions(module, decode, analysis::RegionOptions{.norm_prologue = false, .matmul_fusion = false});
  for (const auto& region : bare.regions) {
    if (region.kind == analysis::RegionKind::kMatmul) {
      EXPECT_EQ(region.nodes.size(), 1u);
    }
  }
  // Prefill normalizes T rows: those norms stay fusion regions. Only the last token's row, which
  // feeds lm_head alone, takes the prologue.
  const ir::Function& prefill = *module.find_function("prefill");
  auto partition = analysis::form_regions(module, prefill);
  int prologues = 0;
  for (const auto& region : partition.regions) {
    const ir::Node& first = prefill.nodes[static_cast<size_t>(region.nodes.front())];
    if (region.kind == analysis::RegionKind::kMatmul && first.op == ir::OpKind::kRmsNorm) {
      ++prologues;
      EXPECT_EQ(prefill.type(first.result).shape[0].value, 1);
    }
  }
  EXPECT_EQ(prologues, 1);
}

// The attention prologue: at one token, the QK-norm / RoPE / KV-append region joins the attention
// that reads its results (Qwen3: two norms, two ropes, two appends; Llama: no norms); prefill keeps
// them apart, and so does the option that turns the rule off.
TEST(Regions, AttentionPrologueOnlyForOneTokenAndCanBeTurnedOff) {
  for (const char* name : {"qwen3-1.7b.json", "llama-3.2-1b.json"}) {
    const bool qwen3 = std::string(name) == "qwen3-1.7b.json";
    ir::Module module = build(name);
    const ir::Function& decode = *module.find_function("decode");
    auto partition = analysis::form_regions(module, decode);
    int attentions = 0;
    for (const auto& region : partition.regions) {
      if (region.kind != analysis::RegionKind::kAttention) continue;
      ++attentions;
      std::vector<std::string> ops;
      for (int n : region.nodes) ops.emplace_back(ir::op_info(decode.nodes[static_cast<size_t>(n)].op).name);
      const std::vector<std::string> expected =
          qwen3 ? std::vector<std::string>{"rmsnorm", "rmsnorm", "rope", "rope", "kv_append", "kv_append", "attention"}
                : std::vector<std::string>{"rope", "rope", "kv_append", "kv_append", "attention"};
      EXPECT_EQ(ops, expected) << name;
      EXPECT_EQ(region.states.size(), 2u);
      ASSERT_EQ(region.outputs.size(), 1u);  // only the attention's result leaves
      EXPECT_EQ(region.outputs[0], decode.nodes[static_cast<size_t>(region.nodes.back())].result);
      EXPECT_EQ(region.inputs.size(), 4u);  // raw q, k, v rows and the position
    }
    EXPECT_GT(attentions, 0);
    for (const auto& region : analysis::form_regions(module, decode, analysis::RegionOptions{.attention_prologue = false}).regions)
      if (region.kind == analysis::RegionKind::kAttention) {
        EXPECT_EQ(region.nodes.size(), 1u);
      }
    const ir::Function& prefill = *module.find_function("prefill");
    for (const auto& region : analysis::form_regions(module, prefill).regions)
      if (region.kind == analysis::RegionKind::kAttention) {
        EXPECT_EQ(region.nodes.size(), 1u) << "prefill attention takes no prologue";
      }
  }
}

TEST(Regions, GemvSummaryCountsWeightBytes) {
  ir::Module module = build("qwen3-1.7b.json");
  const ir::Function& decode = *module.find_function("decode");
  auto partition = analysis::form_regions(module, decode);
  auto unique = analysis::unique_regions(module, decode, partition, {1, 2048});
  bool found = false;
  for (const auto& entry : unique) {
    const auto& s = entry.summary;
    if (s.op_sequence == std::vector<std::string>{"rmsnorm", "linear", "linear", "silu", "mul"}) {
      found = true;
      EXPECT_EQ(s.category, analysis::Category::kGemvEpilogue);
      // gate + up weights (2 x 6144 x 2048 bf16) dominate the bytes; the row and the norm weight
      // are read, the gated row written. 2 FLOPs per weight, 4 per normalized element.
      EXPECT_NEAR(s.bytes, 2.0 * 6144 * 2048 * 2 + 2 * 2048 * 2 + 6144 * 2, 1.0);
      EXPECT_NEAR(s.flops, 2.0 * 2 * 6144 * 2048 + 5.0 * 6144 + 4.0 * 2048, 1.0);
    }
  }
  EXPECT_TRUE(found);
}

// A node that reads nothing of the open fusion region and iterates over another shape starts a
// region of its own (KernelBench's TripletMarginLoss: the first norm's sqrt, over the rows, is not
// part of the second norm's reduction over [rows, cols]; CrossEntropyLoss: the ignore-index mask of
// the targets is not part of the log_softmax). Independent chains of one shape still share a region.
TEST(Regions, IndependentChainsOfAnotherShapeSplit) {
  auto module = ir::parse_module(R"(module m {
  func @forward(%x: f32[16, 64], %y: f32[16, 64], %t: i32[16]) -> (f32[16], f32[16], f32[16, 64], bool[16], f32[16]) {
    %a = mul(%x, %x) : f32[16, 64]
    %s = reduce_sum(%a) {axis = 1, keepdim = 0} : f32[16]
    %r = sqrt(%s) : f32[16]
    %b = mul(%y, %y) : f32[16, 64]
    %s2 = reduce_sum(%b) {axis = 1, keepdim = 0} : f32[16]
    %l = log_softmax(%x) {axis = 1} : f32[16, 64]
    %zero = constant {dtype = "i32", shape = [], value = 0} : i32[]
    %m = ne(%t, %zero) : bool[16]
    %n = neg(%r) : f32[16]
    return %r, %s2, %l, %m, %n
  }
})");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const ir::Function& f = module->functions[0];
  auto partition = analysis::form_regions(*module, f);
  std::vector<std::vector<std::string>> ops;
  for (const auto& region : partition.regions) {
    ops.emplace_back();
    for (int node : region.nodes) ops.back().push_back(std::string(ir::op_name(f.nodes[static_cast<size_t>(node)].op)));
  }
  const std::vector<std::vector<std::string>> expected = {
      {"mul", "reduce_sum"}, {"sqrt"}, {"mul", "reduce_sum"}, {"log_softmax"}, {"ne", "neg"}};
  EXPECT_EQ(ops, expected);
}

}  // namespace
}  // namespace agentcompile
