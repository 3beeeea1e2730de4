// The prefill GEMM family without a GPU: every prefill matmul region of Qwen3-1.7B and Llama-3.2-1B
// (f16 and bf16) is matched with the right variant, its candidates have launch geometry that grows
// with T, and every candidate renders and compiles with NVRTC for sm_90a and sm_80.
#include <algorithm>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "plan/planner.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

struct ModelCase {
  const char* config;
  ir::DType dtype;
};
const ModelCase kModels[] = {{"qwen3-1.7b.json", ir::DType::kF16},
                             {"qwen3-1.7b.json", ir::DType::kBF16},
                             {"llama-3.2-1b.json", ir::DType::kF16},
                             {"llama-3.2-1b.json", ir::DType::kBF16}};

std::vector<plan::RegionPlan> plan_prefill(const ModelCase& model, const std::string& device) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + model.config);
  EXPECT_TRUE(config.has_value());
  config->dtype = model.dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value());
  const ir::Function& function = *module->find_function("prefill");
  auto partition = analysis::form_regions(*module, function);
  auto unique = analysis::unique_regions(*module, function, partition, {2048, 2048});
  auto profile = plan::named_device_profile(device);
  return plan::plan_function(*module, function, partition, unique, *profile, plan::PlannerOptions{});
}

bool is_matmul(const plan::RegionPlan& plan) {
  using analysis::Category;
  const Category c = plan.summary.category;
  return c == Category::kGemm || c == Category::kGemmEpilogue || c == Category::kGemv || c == Category::kGemvEpilogue;
}

TEST(GemmFamily, EveryPrefillMatmulRegionIsMatchedWithItsVariant) {
  for (const ModelCase& model : kModels) {
    SCOPED_TRACE(std::string(model.config) + " " + std::string(ir::dtype_name(model.dtype)));
    std::multiset<std::string> variants;
    for (const auto& plan : plan_prefill(model, "h200")) {
      if (!is_matmul(plan)) continue;
      std::vector<const plan::Candidate*> gemm;
      for (const auto& c : plan.candidates)
        if (c.family == "gemm") gemm.push_back(&c);
      if (plan.summary.op_sequence.front() == "rmsnorm") {
        // The last token's norm + lm_head: a one-token prologue only the GEMV and the fallback take.
        EXPECT_TRUE(gemm.empty()) << "r" << plan.unique_id;
        EXPECT_TRUE(std::any_of(plan.candidates.begin(), plan.candidates.end(), [](const auto& c) { return c.family == "gemv"; }));
        continue;
      }
      ASSERT_GE(gemm.size(), 2u) << "r" << plan.unique_id << ": the best tensor-core candidate and the fallback";
      int fallbacks = 0;
      for (const plan::Candidate* c : gemm) {
        fallbacks += c->fallback;
        EXPECT_EQ(c->launches.size(), 1u);
        const plan::Launch& launch = c->launches.front();
        const int64_t bm = c->params.at("bm"), bn = c->params.at("bn");
        EXPECT_EQ(launch.grid_x.at(37), (c->match.facts.at("N") + bn - 1) / bn) << c->name();
        if (c->match.facts.count("M")) {
          EXPECT_EQ(launch.grid_y.at(37), (c->match.facts.at("M") + bm - 1) / bm) << c->name();
        } else {
          EXPECT_EQ(launch.grid_y.at(1), 1) << c->name();
          EXPECT_EQ(launch.grid_y.at(37), (37 + bm - 1) / bm) << c->name();
          EXPECT_EQ(launch.grid_y.at(2048), (2048 + bm - 1) / bm) << c->name();
        }
        EXPECT_LE(launch.shared_bytes, 232448) << c->name();
        EXPECT_EQ(c->match.facts.at("K") % c->params.at("bk"), 0) << c->name();
      }
      EXPECT_EQ(fallbacks, 1) << "r" << plan.unique_id;
      variants.insert(gemm.front()->match.variant + (gemm.front()->match.out_dtype == ir::DType::kF32 ? "_f32" : ""));
    }
    // qkv, o_proj + residual, gate/up, down + residual (lm_head reads the last row's norm: a GEMV).
    EXPECT_EQ(variants, (std::multiset<std::string>{"multi", "residual", "gate_up", "residual"}));
  }
}

TEST(GemmFamily, TheLmHeadRowStaysWithGemvFirst) {
  for (const auto& plan : plan_prefill(kModels[0], "h200")) {
    if (!is_matmul(plan) || plan.summary.depends_on_T) continue;
    ASSERT_FALSE(plan.candidates.empty());
    EXPECT_EQ(plan.candidates.front().family, "gemv") << plan.candidates.front().name();
  }
}

TEST(GemmFamily, EveryCandidateCompilesWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::map<std::string, std::string> sources;  // by kernel name: regions shared by both models compile once
    for (const ModelCase& model : kModels)
      for (const auto& plan : plan_prefill(model, std::string(arch) == "sm_80" ? "a100" : "h200"))
        for (const auto& candidate : plan.candidates) {
          if (candidate.family != "gemm") continue;
          auto source = codegen::render_source(candidate);
          ASSERT_TRUE(source.has_value()) << source.status().to_string();
          sources.emplace(candidate.name(), *source);
        }
    std::vector<codegen::CompileJob> jobs;
    for (const auto& [name, source] : sources) jobs.push_back({name, source});
    ASSERT_GE(jobs.size(), 20u);
    testing::expect_nvrtc_compiles(jobs, arch);
  }
}

}  // namespace
}  // namespace agentcompile
