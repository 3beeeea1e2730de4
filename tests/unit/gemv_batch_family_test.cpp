// The batched decode GEMV family without a GPU: every matmul region of decode_batch (Qwen3-1.7B and
// Llama-3.2-1B, f16 and bf16) is matched with its variant (fused QKV, o_proj + residual, gate/up,
// down + residual, the logits' projection to f32) and only there (prefill's matmuls are the tile GEMM's);
// its launch grid covers the rows and block rows of 8 or 16 tokens; every candidate renders and
// compiles with NVRTC for sm_90a and sm_80. Its numbers are checked on the GPU, where admission
// validates every candidate against the interpreter.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "ir/decode_batch.h"
#include "nvrtc_expect.h"
#include "plan/planner.h"
#include "plan/sizes.h"

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

std::vector<plan::RegionPlan> plan_function(const ModelCase& model, const std::string& function_name, const std::string& device) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + model.config);
  EXPECT_TRUE(config.has_value());
  config->dtype = model.dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value());
  EXPECT_TRUE(ir::add_decode_batch(*module).is_ok());
  static std::vector<ir::Module> kept;  // the plans point into their module
  kept.reserve(16);
  kept.push_back(std::move(*module));
  const ir::Module& m = kept.back();
  const ir::Function& function = *m.find_function(function_name);
  auto partition = analysis::form_regions(m, function);
  auto unique = analysis::unique_regions(m, function, partition, plan::summary_bindings(function_name, 0));
  auto profile = plan::named_device_profile(device);
  return plan::plan_function(m, function, partition, unique, *profile, plan::PlannerOptions{});
}

TEST(GemvBatchFamily, EveryDecodeBatchMatmulIsMatchedWithItsVariant) {
  for (const ModelCase& model : kModels) {
    SCOPED_TRACE(std::string(model.config) + " " + std::string(ir::dtype_name(model.dtype)));
    std::multiset<std::string> variants;
    for (const auto& plan : plan_function(model, ir::kDecodeBatchFunction, "h200")) {
      std::vector<const plan::Candidate*> batch;
      for (const auto& c : plan.candidates)
        if (c.family == "gemv_batch") batch.push_back(&c);
      if (batch.empty()) continue;
      EXPECT_EQ(plan.candidates.front().family, "gemv_batch") << "r" << plan.unique_id << ": the family ranks first in decode_batch";
      bool library_fallback = false;
      for (const auto& c : plan.candidates) library_fallback |= c.fallback && c.family == "cublas";
      EXPECT_TRUE(library_fallback) << "r" << plan.unique_id;
      for (const plan::Candidate* c : batch) {
        ASSERT_EQ(c->launches.size(), 1u);
        const plan::Launch& launch = c->launches.front();
        const int64_t rows = c->params.at("threads") / 32 / c->params.at("split") * 16 * c->params.at("tiles");
        const int64_t tokens = 8 * c->params.at("token_tiles");
        EXPECT_EQ(launch.grid_x.at(5), (c->match.facts.at("N") + rows - 1) / rows) << c->name();
        for (int64_t T : {1, 5, 8, 9, 16}) EXPECT_EQ(launch.grid_y.at(T), (T + tokens - 1) / tokens) << c->name() << " T=" << T;
        EXPECT_EQ(c->match.facts.at("K") % 32, 0) << c->name();
      }
      variants.insert(batch.front()->match.variant + (batch.front()->match.out_dtype == ir::DType::kF32 ? "_f32" : ""));
    }
    EXPECT_EQ(variants, (std::multiset<std::string>{"multi", "residual", "gate_up", "residual", "plain_f32"}));
  }
}

TEST(GemvBatchFamily, PrefillAndDecodeKeepTheirFamilies) {
  for (const char* function : {"prefill", "decode"})
    for (const auto& plan : plan_function(kModels[0], function, "h200"))
      for (const auto& c : plan.candidates) EXPECT_NE(c.family, "gemv_batch") << function << " r" << plan.unique_id;
}

TEST(GemvBatchFamily, EveryCandidateCompilesWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::map<std::string, std::string> sources;
    for (const ModelCase& model : kModels)
      for (const auto& plan : plan_function(model, ir::kDecodeBatchFunction, std::string(arch) == "sm_80" ? "a100" : "h200"))
        for (const auto& candidate : plan.candidates) {
          if (candidate.family != "gemv_batch") continue;
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
