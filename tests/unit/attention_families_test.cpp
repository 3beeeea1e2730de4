// The rope_kv and attention_decode families without a GPU: on the Qwen3-1.7B (QK-norm) and
// Llama-3.2-1B (llama3 rope scaling) graphs, in f16 and bf16, decode and prefill, they match every
// rope_kv_append region (decode ones where the attention prologue is off) and every attention_decode
// region, with and without its QK-norm / RoPE / KV-append prologue, with the right roles; their spaces
// carry a fallback, launches follow T and the workspace fits the splits, and every candidate renders
// and compiles with NVRTC for sm_90a and sm_80.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <set>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "ir/interpreter_ops.h"
#include "plan/planner.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

struct ModelCase {
  const char* config;
  ir::DType dtype;
  const char* function;
};

std::vector<ModelCase> all_cases() {
  std::vector<ModelCase> cases;
  for (const char* config : {"qwen3-1.7b.json", "llama-3.2-1b.json"})
    for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16})
      for (const char* function : {"decode", "prefill"}) cases.push_back({config, dtype, function});
  return cases;
}

std::string label(const ModelCase& c) {
  return std::string(c.config) + " " + std::string(ir::dtype_name(c.dtype)) + " " + c.function;
}

std::vector<plan::RegionPlan> plan_model(const ModelCase& c, const std::string& device, const analysis::RegionOptions& options = {}) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + c.config);
  EXPECT_TRUE(config.has_value());
  config->dtype = c.dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value());
  const ir::Function& function = *module->find_function(c.function);
  auto partition = analysis::form_regions(*module, function, options);
  auto unique = analysis::unique_regions(*module, function, partition, {1, 2048});
  auto profile = plan::named_device_profile(device);
  return plan::plan_function(*module, function, partition, unique, *profile, plan::PlannerOptions{});
}

std::vector<const plan::Candidate*> of_family(const plan::RegionPlan& plan, const std::string& family) {
  std::vector<const plan::Candidate*> out;
  for (const auto& c : plan.candidates)
    if (c.family == family) out.push_back(&c);
  return out;
}

// Decode RoPE regions exist only where the attention prologue is off (the unfused ablation).
const analysis::RegionOptions kSeparateRope{.attention_prologue = false};

bool matched(const plan::RegionPlan& plan, const std::string& family) {
  return std::find(plan.families_matched.begin(), plan.families_matched.end(), family) != plan.families_matched.end();
}

TEST(RopeKvFamily, MatchesEveryRopeRegion) {
  for (const ModelCase& mc : all_cases()) {
    const bool qwen = std::string(mc.config).rfind("qwen3", 0) == 0;
    int regions = 0;
    for (const auto& plan : plan_model(mc, "h200", kSeparateRope)) {
      if (plan.summary.category != analysis::Category::kRopeKvAppend) continue;
      ++regions;
      ASSERT_TRUE(matched(plan, "rope_kv")) << label(mc) << " r" << plan.unique_id;
      const auto cands = of_family(plan, "rope_kv");
      ASSERT_FALSE(cands.empty()) << label(mc);
      EXPECT_TRUE(std::any_of(cands.begin(), cands.end(), [](const plan::Candidate* c) { return c->fallback; })) << label(mc);
      const plan::Match& m = cands.front()->match;
      EXPECT_EQ(m.variant, qwen ? "qknorm_rope_append" : "rope_append") << label(mc);
      EXPECT_EQ(m.dtype, mc.dtype);
      ASSERT_EQ(m.facts.at("streams"), 3);
      // q is rotated into an output, k is rotated into the cache, v goes to the cache as it is.
      EXPECT_EQ(m.facts.at("heads0"), qwen ? 16 : 32);
      EXPECT_EQ(m.facts.at("heads1"), 8);
      EXPECT_EQ(m.facts.at("heads2"), 8);
      EXPECT_EQ(m.facts.at("rope0"), 1);
      EXPECT_EQ(m.facts.at("rope1"), 1);
      EXPECT_EQ(m.facts.at("rope2"), 0);
      EXPECT_EQ(m.roles.at("y0"), "out0");
      EXPECT_EQ(m.roles.count("y1") + m.roles.count("y2"), 0u);
      EXPECT_EQ(m.roles.at("cache1"), "state0");
      EXPECT_EQ(m.roles.at("cache2"), "state1");
      EXPECT_EQ(m.roles.count("norm0") + m.roles.count("norm1"), qwen ? 2u : 0u);
      EXPECT_EQ(m.facts.at("rope_llama3"), qwen ? 0 : 1);
      // The grid covers T * (NH + 2 KV) rows.
      const plan::Launch& launch = cands.front()->launches.front();
      const int64_t rows_per_block = cands.front()->params.at("threads") / (m.facts.at("D") / 2 / cands.front()->params.at("vec"));
      for (int64_t T : {1, 7, 4096})
        EXPECT_EQ(launch.grid_x.at(T), (T * m.facts.at("rows") + rows_per_block - 1) / rows_per_block) << label(mc);
    }
    EXPECT_EQ(regions, 1) << label(mc);
  }
}

TEST(RopeKvFamily, RendersTheInterpretersInvFreq) {
  const ModelCase llama{"llama-3.2-1b.json", ir::DType::kBF16, "decode"};
  int rendered = 0;
  // The rope_kv kernel of the unfused graph, and the decode attention that opens with the RoPE.
  for (const auto& [options, family] : {std::pair{kSeparateRope, "rope_kv"}, std::pair{analysis::RegionOptions{}, "attention_decode"}})
  for (const auto& plan : plan_model(llama, "h200", options)) {
    const auto cands = of_family(plan, family);
    if (cands.empty()) continue;
    ++rendered;
    auto source = codegen::render_source(*cands.front());
    ASSERT_TRUE(source.has_value()) << source.status().to_string();
    ir::kernels::RopeParams params;
    params.theta = 500000.0;
    params.scaling = "llama3";
    params.factor = 32.0;
    params.low_freq_factor = 1.0;
    params.high_freq_factor = 4.0;
    params.original_max_position = 8192.0;
    const auto inv_freq = ir::kernels::rope_inv_freq(params, 64);
    for (size_t i : {size_t{1}, size_t{20}, size_t{31}}) {
      char literal[64];
      std::snprintf(literal, sizeof(literal), "%af", static_cast<double>(inv_freq[i]));
      EXPECT_NE(source->find(literal), std::string::npos) << "inv_freq[" << i << "] = " << literal << " missing:\n" << *source;
    }
  }
  EXPECT_EQ(rendered, 2) << "a rope_kv and an attention_decode candidate in the Llama decode graphs";
}

TEST(AttentionDecodeFamily, MatchesEveryDecodeAttentionRegion) {
  for (const ModelCase& mc : all_cases()) {
    const bool qwen = std::string(mc.config).rfind("qwen3", 0) == 0;
    const bool decode = std::string(mc.function) == "decode";
    int regions = 0;
    for (const auto& plan : plan_model(mc, "h200")) {
      if (plan.summary.category == analysis::Category::kAttentionPrefill) {
        EXPECT_FALSE(matched(plan, "attention_decode")) << label(mc) << ": T > 1 is the prefill family's";
        continue;
      }
      if (plan.summary.category != analysis::Category::kAttentionDecode) continue;
      ++regions;
      ASSERT_TRUE(matched(plan, "attention_decode")) << label(mc) << " r" << plan.unique_id;
      const auto cands = of_family(plan, "attention_decode");
      ASSERT_FALSE(cands.empty());
      const plan::Match& m = cands.front()->match;
      EXPECT_EQ(m.facts.at("NH"), qwen ? 16 : 32);
      EXPECT_EQ(m.facts.at("KV"), 8);
      EXPECT_EQ(m.facts.at("D"), qwen ? 128 : 64);
      // The region opens with the token's QK-norm (Qwen3), RoPE and KV append: the query and the new
      // key and value rows are raw inputs, the caches the region's states.
      EXPECT_EQ(m.facts.at("prologue"), 1);
      EXPECT_EQ(m.facts.at("qk_norm"), qwen ? 1 : 0);
      EXPECT_EQ(m.facts.at("rope"), 1);
      std::set<std::string> inputs;
      for (const char* role : {"q", "k_new", "v_new", "pos"}) {
        EXPECT_EQ(m.roles.at(role).rfind("in", 0), 0u) << role;
        inputs.insert(m.roles.at(role));
      }
      EXPECT_EQ(inputs.size(), 4u);
      EXPECT_EQ(m.roles.at("k"), "state0");
      EXPECT_EQ(m.roles.at("v"), "state1");
      EXPECT_EQ(m.roles.count("q_norm") + m.roles.count("k_norm"), qwen ? 2u : 0u);
      EXPECT_EQ(m.roles.at("out"), "out0");
      EXPECT_NE(cands.front()->name().find(qwen ? "_qknorm_rope_theta1000000_append" : "_rope_theta500000_llama3_append"), std::string::npos)
          << cands.front()->name();
      bool split = false, single = false, fallback = false, cluster = false;
      for (const plan::Candidate* c : cands) {
        const int64_t splits = c->params.at("splits");
        fallback |= c->fallback;
        if (splits == 1) {
          single = true;
          EXPECT_EQ(c->launches.size(), 1u);
          EXPECT_EQ(c->workspace_bytes_fixed, 0);
          continue;
        }
        if (c->params.at("cluster") != 0) {  // one launch: a cluster of `splits` blocks per kv head
          cluster = true;
          EXPECT_LE(splits, 16) << c->name() << ": the largest cluster sm_90 schedules";
          ASSERT_EQ(c->launches.size(), 1u) << c->name();
          EXPECT_EQ(c->launches[0].grid_x.at(1), splits);
          EXPECT_EQ(c->launches[0].grid_y.at(1), 8);
          EXPECT_EQ(c->workspace_bytes_fixed, 0);
          continue;
        }
        split = true;
        ASSERT_EQ(c->launches.size(), 2u) << c->name();
        EXPECT_EQ(c->launches[0].grid_x.at(1), splits);
        EXPECT_EQ(c->launches[0].grid_y.at(1), 8);
        EXPECT_EQ(c->launches[1].grid_x.at(1), m.facts.at("NH"));
        EXPECT_GE(c->workspace_bytes_fixed, m.facts.at("NH") * splits * (m.facts.at("D") + 2) * 4);
      }
      EXPECT_TRUE(split) << label(mc);
      EXPECT_TRUE(cluster) << label(mc) << ": sm_90 gets the one-launch cluster split";
      EXPECT_TRUE(single) << label(mc) << ": the single-launch fallback must stay in the space";
      EXPECT_TRUE(fallback) << label(mc);
    }
    EXPECT_EQ(regions, decode ? 1 : 0) << label(mc);
  }
}

// Without the prologue (the unfused ablation), decode attention reads q, k, v and pos from its inputs.
TEST(AttentionDecodeFamily, MatchesTheAttentionAloneWithoutPrologue) {
  for (const ModelCase& mc : all_cases()) {
    if (std::string(mc.function) != "decode") continue;
    int regions = 0;
    for (const auto& plan : plan_model(mc, "h200", kSeparateRope)) {
      if (plan.summary.category != analysis::Category::kAttentionDecode) continue;
      ++regions;
      const auto cands = of_family(plan, "attention_decode");
      ASSERT_FALSE(cands.empty()) << label(mc);
      const plan::Match& m = cands.front()->match;
      EXPECT_EQ(m.facts.count("prologue"), 0u);
      EXPECT_EQ(m.roles.at("q"), "in0");
      EXPECT_EQ(m.roles.at("k"), "in1");
      EXPECT_EQ(m.roles.at("v"), "in2");
      EXPECT_EQ(m.roles.at("pos"), "in3");
      EXPECT_EQ(m.roles.count("k_new"), 0u);
    }
    EXPECT_EQ(regions, 1) << label(mc);
  }
}

TEST(AttentionFamilies, EveryCandidateCompilesWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::vector<codegen::CompileJob> jobs;
    for (const ModelCase& mc : all_cases())
      for (const auto& options : {analysis::RegionOptions{}, kSeparateRope})
      for (const auto& plan : plan_model(mc, std::string(arch) == "sm_80" ? "a100" : "h200", options))
        for (const auto& c : plan.candidates) {
          if (c.family != "rope_kv" && c.family != "attention_decode") continue;
          auto source = codegen::render_source(c);
          ASSERT_TRUE(source.has_value()) << source.status().to_string();
          const bool seen = std::any_of(jobs.begin(), jobs.end(), [&](const codegen::CompileJob& j) { return j.kernel == c.name(); });
          if (!seen) jobs.push_back({c.name(), *source});
        }
    ASSERT_GE(jobs.size(), 16u);
    testing::expect_nvrtc_compiles(jobs, arch);
  }
}

// Llama-3 70B has 8 query heads per kv head (64 over 8, at any tensor-parallel degree): past the
// register estimate the other models fit, so its decode attention is planned under the hardware's
// limit instead of falling to the reference kernel, and those candidates compile (254 registers and
// no spill for the 256-thread split kernel, ptxas on sm_90a).
TEST(AttentionFamilies, EightQueryHeadsPerKvHeadGetTheSplitKvKernel) {
  auto include = codegen::cuda_include_dir();
  std::vector<codegen::CompileJob> jobs;
  int regions = 0;
  for (const auto& plan : plan_model({"llama-3.1-70b.json", ir::DType::kBF16, "decode"}, "h200")) {
    const auto decode = of_family(plan, "attention_decode");
    if (plan.summary.category != analysis::Category::kAttentionDecode) continue;
    ++regions;
    ASSERT_FALSE(decode.empty()) << "r" << plan.unique_id << ": only " << plan.candidates.front().name();
    EXPECT_EQ(plan.candidates.front().family, "attention_decode");
    for (const plan::Candidate* c : decode) {
      EXPECT_EQ(c->match.facts.at("group"), 8) << c->name();
      auto source = codegen::render_source(*c);
      ASSERT_TRUE(source.has_value()) << source.status().to_string();
      jobs.push_back({c->name(), *source});
    }
  }
  EXPECT_EQ(regions, 1);
  if (!include) GTEST_SKIP() << include.status().to_string();
  testing::expect_nvrtc_compiles(jobs, "sm_90a");
}

}  // namespace
}  // namespace agentcompile
