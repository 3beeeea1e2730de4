// On the GPU: the prefill matmul regions (fused QKV, o_proj + residual, gate/up + SiLU·mul,
// down + residual, lm_head + cast on the last row) are admitted with the gemm family's candidates:
// at T = 2048, where the tensor-core candidates are timed and their throughput printed against the
// Tensor Core peak, and at ragged token counts (T = 37) in f16 and bf16, where the row edge is
// exercised (the lm_head row, whose size does not depend on T, is admitted once). Every gemm
// candidate must validate.
#include <algorithm>
#include <cstdio>

#include "gpu_test_support.h"

namespace agentcompile {
namespace {

constexpr double kPeakTflops = 990;  // dense f16 Tensor Core peak of an H100/H200 (wgmma)

// `with_static_rows`: also the regions whose row count does not depend on T (the lm_head row),
// which need admitting at one T only.
void admit_gemm_regions(const gpu::DeviceInfo& gpu, const std::string& config, ir::DType dtype, tune::RegionBindings bindings,
                        int max_candidates, int seeds, bool with_static_rows) {
  ir::Module module = testing::build_config_module(config, dtype);
  const ir::Function& prefill = *module.find_function("prefill");
  auto partition = analysis::form_regions(module, prefill);
  auto unique = analysis::unique_regions(module, prefill, partition, {bindings.T, bindings.L});
  auto profile = plan::named_device_profile("h200");
  plan::PlannerOptions options;
  options.max_candidates = max_candidates;
  auto plans = plan::plan_function(module, prefill, partition, unique, *profile, options);
  std::printf("== %s %s prefill, T=%lld: gemm candidates (%d seeds x 2 distributions)\n", config.c_str(),
              std::string(ir::dtype_name(dtype)).c_str(), (long long)bindings.T, seeds);
  int regions = 0;
  for (const auto& plan : plans) {
    std::vector<plan::Candidate> candidates;
    for (const auto& c : plan.candidates)
      if (c.family == "gemm") candidates.push_back(c);
    if (candidates.empty() || (!with_static_rows && !plan.summary.depends_on_T)) continue;
    ++regions;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, prefill, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, bindings, seeds, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
    auto compiled = testing::compile_candidates(candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions admit;
    admit.repetitions = 20;
    auto results = tune::admit_candidates(*region_module, bindings, *cases, candidates, compiled, admit);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();

    const double flops = plan.summary.flops;  // at bindings.T
    const double floor_us = flops / (kPeakTflops * 1e12) * 1e6;
    std::printf("r%d", plan.unique_id);
    for (const auto& op : plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("  (%.2f GFLOP, Tensor Core floor %.2f us)\n", flops / 1e9, floor_us);
    double best = 0;
    std::string best_name;
    for (const auto& r : *results) {
      const double tflops = r.validated && r.median_us > 0 ? flops / (r.median_us * 1e-6) / 1e12 : 0;
      if (tflops > best) {
        best = tflops;
        best_name = r.name;
      }
      std::printf("  %-4s %-66s %s err %.2e  %9.2f us [%8.2f, %8.2f]  %6.1f TFLOP/s  %s\n", r.id.c_str(), r.name.c_str(),
                  r.validated ? "ok " : "REJ", r.max_rel_error, r.median_us, r.p10_us, r.p90_us, tflops,
                  r.rejection.substr(0, 160).c_str());
      EXPECT_TRUE(r.validated) << r.name << ": " << r.rejection;
      if (r.validated) {
        EXPECT_EQ(r.cases, 2 * seeds) << r.name;
      }
    }
    std::printf("  best %.1f TFLOP/s (%.0f%% of the %.0f TFLOP/s peak, %.2fx the floor): %s\n", best, 100 * best / kPeakTflops,
                kPeakTflops, best > 0 ? kPeakTflops / best : 0.0, best_name.c_str());
  }
  // The last token's lm_head opens with the final norm (a norm prologue), which the gemm family
  // leaves to the gemv family, so the static-row regions add none.
  EXPECT_EQ(regions, 4) << "qkv, o_proj + residual, gate/up, down + residual";
}

TEST(GemmAdmission, Qwen3PrefillT2048) {
  AC_REQUIRE_GPU();
  admit_gemm_regions(*gpu, "qwen3-1.7b.json", ir::DType::kF16, {2048, 256, 0}, 12, 3, true);
}

TEST(GemmAdmission, Qwen3PrefillRaggedT37) {
  AC_REQUIRE_GPU();
  admit_gemm_regions(*gpu, "qwen3-1.7b.json", ir::DType::kF16, {37, 256, 0}, 8, 3, false);
}

TEST(GemmAdmission, LlamaPrefillRaggedT37Bf16) {
  AC_REQUIRE_GPU();
  admit_gemm_regions(*gpu, "llama-3.2-1b.json", ir::DType::kBF16, {37, 256, 0}, 8, 3, false);
}

}  // namespace
}  // namespace agentcompile
