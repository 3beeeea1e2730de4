// On the GPU: every unique region of the Qwen3-1.7B and Llama-3.2-1B prefill and decode graphs is
// planned, compiled, validated against the reference interpreter and timed. A region no family can
// implement, or one whose candidates all fail, fails the test with the reasons.
#include <cstdio>

#include "gpu_test_support.h"

namespace agentcompile {
namespace {

void admit_function(const gpu::DeviceInfo& gpu, const std::string& config, ir::DType dtype, const std::string& function_name,
                    tune::RegionBindings bindings) {
  ir::Module module = testing::build_config_module(config, dtype);
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {bindings.T, bindings.L});
  auto profile = plan::named_device_profile("h200");
  auto plans = plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
  std::printf("== %s %s %s (T=%lld, L=%lld, pos=%d)\n", config.c_str(), std::string(ir::dtype_name(dtype)).c_str(),
              function_name.c_str(), (long long)bindings.T, (long long)bindings.L, bindings.pos);
  for (const auto& plan : plans) {
    std::printf("r%d %-18s", plan.unique_id, analysis::category_name(plan.summary.category));
    for (const auto& op : plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("\n");
    EXPECT_FALSE(plan.candidates.empty()) << config << " " << function_name << " r" << plan.unique_id << ": " << plan.unplanned_reason;
    if (plan.candidates.empty()) continue;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, function, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, bindings, 3, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
    auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions options;
    options.repetitions = 20;
    auto results = tune::admit_candidates(*region_module, bindings, *cases, plan.candidates, compiled, options);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();
    int validated = 0;
    for (const auto& r : *results) {
      validated += r.validated;
      std::printf("  %-4s %-64s %s err %.2e  %9.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ",
                  r.max_rel_error, r.median_us, r.rejection.substr(0, 160).c_str());
    }
    EXPECT_GT(validated, 0) << config << " " << function_name << " r" << plan.unique_id << ": no candidate validated";
  }
}

TEST(RegionAdmission, Qwen3Decode) {
  AC_REQUIRE_GPU();
  admit_function(*gpu, "qwen3-1.7b.json", ir::DType::kF16, "decode", {1, 512, 77});
}

TEST(RegionAdmission, Qwen3Prefill) {
  AC_REQUIRE_GPU();
  admit_function(*gpu, "qwen3-1.7b.json", ir::DType::kF16, "prefill", {96, 256, 32});
}

TEST(RegionAdmission, LlamaDecodeBf16) {
  AC_REQUIRE_GPU();
  admit_function(*gpu, "llama-3.2-1b.json", ir::DType::kBF16, "decode", {1, 512, 300});
}

TEST(RegionAdmission, LlamaPrefillBf16) {
  AC_REQUIRE_GPU();
  admit_function(*gpu, "llama-3.2-1b.json", ir::DType::kBF16, "prefill", {80, 256, 0});
}

}  // namespace
}  // namespace agentcompile
