// The prefill attention family without a GPU: the attention regions of the Qwen3-1.7B (NH=16, KV=8,
// D=128) and Llama-3.2-1B (NH=32, KV=8, D=64) prefill graphs, in f16 and bf16, are matched; the
// space holds mma candidates and the SIMT fallback; every candidate renders and compiles with NVRTC
// for sm_90a and sm_80.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "plan/planner.h"
#include "plan/template_family.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

struct ModelCase {
  const char* config;
  int64_t NH, KV, D;
  int mma_candidates;  // on an H200
};
// D=128: 64- and 128-row blocks of 16-row warps x 32/64-key tiles x 2/3 stages (128-key tiles spill).
// D=64: the same with 128-key tiles, and 128-row blocks of 32-row warps with 32/64-key tiles.
constexpr ModelCase kModels[] = {{"qwen3-1.7b.json", 16, 8, 128, 8}, {"llama-3.2-1b.json", 32, 8, 64, 16}};

// Plans of the prefill attention regions of a model.
std::vector<plan::RegionPlan> attention_plans(const ModelCase& model, ir::DType dtype, const plan::DeviceProfile& device,
                                              int max_candidates = 8) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + model.config);
  EXPECT_TRUE(config.has_value());
  config->dtype = dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value());
  const ir::Function& prefill = *module->find_function("prefill");
  auto partition = analysis::form_regions(*module, prefill);
  auto unique = analysis::unique_regions(*module, prefill, partition, {2048, 2048});
  plan::PlannerOptions options;
  options.max_candidates = max_candidates;
  std::vector<plan::RegionPlan> out;
  for (auto& plan : plan::plan_function(*module, prefill, partition, unique, device, options))
    if (plan.summary.category == analysis::Category::kAttentionPrefill) out.push_back(std::move(plan));
  return out;
}

std::vector<plan::RegionPlan> attention_plans(const ModelCase& model, ir::DType dtype, const std::string& device, int max_candidates = 8) {
  return attention_plans(model, dtype, *plan::named_device_profile(device), max_candidates);
}

TEST(AttentionPrefillFamily, MatchesEveryPrefillAttentionRegion) {
  for (const ModelCase& model : kModels)
    for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16}) {
      auto plans = attention_plans(model, dtype, "h200", 64);
      ASSERT_EQ(plans.size(), 1u) << model.config;  // one unique region, one site per layer
      const auto& plan = plans.front();
      ASSERT_FALSE(plan.candidates.empty()) << plan.unplanned_reason;
      int fallbacks = 0, mma = 0;
      for (const auto& c : plan.candidates) {
        if (c.family != "attention_prefill") continue;
        EXPECT_EQ(c.match.facts.at("NH"), model.NH);
        EXPECT_EQ(c.match.facts.at("KV"), model.KV);
        EXPECT_EQ(c.match.facts.at("D"), model.D);
        EXPECT_EQ(c.match.roles.at("q"), "in0");
        EXPECT_EQ(c.match.roles.at("k"), "in1");
        EXPECT_EQ(c.match.roles.at("v"), "in2");
        EXPECT_EQ(c.match.roles.at("pos"), "in3");
        EXPECT_EQ(c.match.roles.at("o"), "out0");
        ASSERT_EQ(c.launches.size(), 1u);
        const plan::Launch& launch = c.launches.front();
        EXPECT_EQ(launch.grid_y.at(2048), model.NH);
        if (c.fallback) {
          ++fallbacks;
          EXPECT_EQ(launch.grid_x.at(37), (37 + c.params.at("warps") - 1) / c.params.at("warps"));
        } else {
          ++mma;
          const int64_t warp_rows = c.params.at("block_m") / c.params.at("warps");
          EXPECT_TRUE(warp_rows == 16 || warp_rows == 32) << c.name();
          EXPECT_EQ(launch.grid_x.at(2048), 2048 / c.params.at("block_m"));
          EXPECT_EQ(launch.grid_x.at(37), 1);
          EXPECT_LE(launch.shared_bytes, 232448);
        }
      }
      EXPECT_EQ(fallbacks, 1);
      EXPECT_EQ(mma, model.mma_candidates) << model.config;
    }
}

TEST(AttentionPrefillFamily, SharedMemoryFilterFollowsTheDevice) {
  auto device = *plan::named_device_profile("h200");
  // The family's candidates on `device`: the cap (64) is above the space, so these are all of them.
  auto prefill_candidates = [&] {
    auto plans = attention_plans(kModels[0], ir::DType::kBF16, device, 64);
    EXPECT_EQ(plans.size(), 1u);
    std::vector<plan::Candidate> out;
    for (const auto& c : plans.front().candidates)
      if (c.family == "attention_prefill") out.push_back(c);
    return out;
  };
  const size_t all = prefill_candidates().size();
  device.shared_per_block_optin = 64 * 1024;
  device.shared_per_sm = 100 * 1024;
  const auto small = prefill_candidates();
  EXPECT_LT(small.size(), all);
  EXPECT_GT(small.size(), 1u);  // some tile still fits, besides the fallback
  for (const auto& c : small) {
    if (c.fallback) continue;
    EXPECT_LE(c.launches.front().shared_bytes, 64 * 1024) << c.name();
  }
}

TEST(AttentionPrefillFamily, EveryCandidateCompilesWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::vector<codegen::CompileJob> jobs;
    for (const ModelCase& model : kModels)
      for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16})
        for (const auto& plan : attention_plans(model, dtype, std::string(arch) == "sm_80" ? "a100" : "h200", 64))
          for (const auto& candidate : plan.candidates) {
            if (candidate.family != "attention_prefill") continue;
            auto source = codegen::render_source(candidate);
            ASSERT_TRUE(source.has_value()) << source.status().to_string();
            jobs.push_back({candidate.name(), *source});
          }
    ASSERT_EQ(jobs.size(), 2u * (8 + 1 + 16 + 1));  // both dtypes of both models
    testing::expect_nvrtc_compiles(jobs, arch);
  }
}

}  // namespace
}  // namespace agentcompile
