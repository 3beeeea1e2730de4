// On the GPU: every region of every module of tests/unit/primitive_modules.h (the KernelBench-style
// problems as primitive ops: activations, softmax, norms, reductions over any axis, scans, losses,
// matmuls with transposed and batched operands, GEMM epilogues, copies and gathers), in f32 and f16,
// is planned for this device, compiled, validated against the reference interpreter on three seeds
// and two input distributions (outputs poisoned with NaN before each run, inputs checked unchanged)
// and timed. Every candidate must validate: none of these families has a numerically risky variant,
// so a rejection is a bug. Each region prints its candidates, errors and best latency.
#include <cstdio>

#include "gpu_test_support.h"
#include "primitive_modules.h"

namespace agentcompile {
namespace {

void admit_module(const gpu::DeviceInfo& gpu, const std::string& label, const ir::Module& module) {
  const ir::Function& function = module.functions.front();
  const tune::RegionBindings bindings{1, 256, 0};
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {bindings.T, bindings.L});
  auto profile = plan::named_device_profile(gpu.sm_major >= 9 ? "h200" : "a100");
  ASSERT_TRUE(profile.has_value());
  auto plans = plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
  for (const auto& plan : plans) {
    std::printf("== %s r%d %s:", label.c_str(), plan.unique_id, analysis::category_name(plan.summary.category));
    for (const auto& op : plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf(" (%.3g bytes)\n", plan.summary.bytes);
    ASSERT_FALSE(plan.candidates.empty()) << label << ": " << plan.unplanned_reason;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, function, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, bindings, 3, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    ASSERT_TRUE(cases.has_value()) << label << ": " << cases.status().to_string();
    auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions options;
    options.repetitions = 10;
    auto results = tune::admit_candidates(*region_module, bindings, *cases, plan.candidates, compiled, options);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();
    double best = 0;
    for (size_t i = 0; i < results->size(); ++i) {
      const auto& r = (*results)[i];
      std::printf("  %-4s %-72s %s err %.2e  %9.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ",
                  r.max_rel_error, r.median_us, r.rejection.substr(0, 160).c_str());
      EXPECT_TRUE(r.validated) << label << " " << r.name << ": " << r.rejection;
      if (r.validated && r.measured && (best == 0 || r.median_us < best)) best = r.median_us;
    }
    if (best > 0) std::printf("  best %.2f us, %.1f GB/s\n", best, plan.summary.bytes / (best * 1e3));
    std::fflush(stdout);
  }
}

TEST(PrimitiveAdmission, EveryProblemValidatesOnTheGpu) {
  AC_REQUIRE_GPU();
  for (const auto& m : testing::primitive_modules())
    for (ir::DType dtype : m.dtypes) {
      auto module = ir::parse_module(testing::with_dtype(m.text, dtype), m.name);
      ASSERT_TRUE(module.has_value()) << m.name << ": " << module.status().to_string();
      admit_module(*gpu, m.name + " " + std::string(ir::dtype_name(dtype)), *module);
    }
}

}  // namespace
}  // namespace agentcompile
