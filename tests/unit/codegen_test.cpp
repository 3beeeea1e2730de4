// Planning and NVRTC compilation of real regions without a GPU: every planned candidate of the
// Qwen3-1.7B and Llama-3.2-1B graphs renders and compiles for sm_90a and sm_80.
#include <gtest/gtest.h>

#include <filesystem>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "plan/planner.h"

namespace agentcompile {
namespace {

std::vector<plan::RegionPlan> plan_model(const std::string& config_name, const std::string& function_name,
                                         const std::string& device) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + config_name);
  EXPECT_TRUE(config.has_value());
  config->dtype = ir::DType::kF16;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value());
  const ir::Function& function = *module->find_function(function_name);
  auto partition = analysis::form_regions(*module, function);
  auto unique = analysis::unique_regions(*module, function, partition, {1, 2048});
  auto profile = plan::named_device_profile(device);
  return plan::plan_function(*module, function, partition, unique, *profile, plan::PlannerOptions{});
}

TEST(Planner, GemvRegionsGetBoundedDiverseSpaces) {
  auto plans = plan_model("qwen3-1.7b.json", "decode", "h200");
  int gemv_regions = 0;
  for (const auto& plan : plans) {
    if (plan.summary.category != analysis::Category::kGemv && plan.summary.category != analysis::Category::kGemvEpilogue) continue;
    ++gemv_regions;
    ASSERT_FALSE(plan.candidates.empty()) << "r" << plan.unique_id << ": " << plan.unplanned_reason;
    EXPECT_LE(plan.candidates.size(), 8u);
    EXPECT_GT(plan.enumerated, static_cast<int>(plan.candidates.size()));
    for (size_t i = 1; i < plan.candidates.size(); ++i) EXPECT_GE(plan.candidates[i - 1].score, plan.candidates[i].score);
  }
  EXPECT_EQ(gemv_regions, 5);  // qkv, o+residual, gate/up, down+residual, lm_head
}

TEST(Codegen, EveryGemvCandidateCompilesWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    auto plans = plan_model("qwen3-1.7b.json", "decode", std::string(arch) == "sm_80" ? "a100" : "h200");
    std::vector<codegen::CompileJob> jobs;
    for (const auto& plan : plans)
      for (const auto& candidate : plan.candidates) {
        if (candidate.source_class == "library") continue;
        auto source = codegen::render_source(candidate);
        ASSERT_TRUE(source.has_value()) << source.status().to_string();
        jobs.push_back({candidate.name(), *source});
      }
    ASSERT_FALSE(jobs.empty());
    codegen::NvrtcOptions options;
    options.arch = arch;
    options.cache_dir = std::filesystem::path(AC_BINARY_DIR) / "test-nvrtc-cache";
    auto results = codegen::compile_all(jobs, options);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();
    for (const auto& result : *results) EXPECT_TRUE(result.ok) << result.kernel << ":\n" << result.log;
  }
}

TEST(Codegen, CompileErrorsAreReportedNotFatal) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  codegen::NvrtcOptions options;
  auto results = codegen::compile_all({{"broken", "extern \"C\" __global__ void broken() { undefined_symbol(); }"}}, options);
  ASSERT_TRUE(results.has_value());
  ASSERT_EQ(results->size(), 1u);
  EXPECT_FALSE(results->front().ok);
  EXPECT_NE(results->front().log.find("undefined_symbol"), std::string::npos) << results->front().log;
}

}  // namespace
}  // namespace agentcompile
