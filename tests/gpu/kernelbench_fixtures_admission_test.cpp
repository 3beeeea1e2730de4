// On the GPU: every region of the KernelBench-shaped captured fixtures that need issue 21's newer
// capabilities (tests/unit/kernelbench_fixtures_test.cpp: a triangular-mask matmul epilogue, Gemm +
// BatchNorm in f16 whose statistics widen the matmul's f16 result, CrossEntropyLoss's integer count and 1-D sums,
// TripletMarginLoss's row norms, attention of plain tensors with a T batch) is raised as the compiler
// raises it, planned for this device, compiled, validated against the reference interpreter on three
// seeds and two input distributions and timed. Every candidate must validate.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "analysis/recognize/recognize.h"
#include "gpu_test_support.h"
#include "ir/text.h"

namespace agentcompile {
namespace {

void admit_fixture(const gpu::DeviceInfo& gpu, const std::string& name) {
  const std::string path = std::string(AC_SOURCE_DIR) + "/tests/fixtures/captured/" + name + "/module.ir";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ir::parse_module(text.str(), path);
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  auto raised = analysis::recognize_module(std::move(*parsed));
  ASSERT_TRUE(raised.has_value()) << raised.status().to_string();
  const ir::Module& module = *raised;
  const ir::Function& function = module.functions.front();
  const tune::RegionBindings bindings{4, 256, 0};  // T = 4 where the batch is symbolic
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {bindings.T, bindings.L});
  auto profile = plan::named_device_profile(gpu.sm_major >= 9 ? "h200" : "a100");
  ASSERT_TRUE(profile.has_value());
  auto plans = plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
  for (const auto& plan : plans) {
    std::printf("== %s r%d %s:", name.c_str(), plan.unique_id, analysis::category_name(plan.summary.category));
    for (const auto& op : plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("\n");
    ASSERT_FALSE(plan.candidates.empty()) << name << ": " << plan.unplanned_reason;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, function, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, bindings, 3, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    ASSERT_TRUE(cases.has_value()) << name << ": " << cases.status().to_string();
    auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions options;
    options.repetitions = 10;
    auto results = tune::admit_candidates(*region_module, bindings, *cases, plan.candidates, compiled, options);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();
    for (const auto& r : *results) {
      std::printf("  %-4s %-72s %s err %.2e  %9.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ",
                  r.max_rel_error, r.median_us, r.rejection.substr(0, 160).c_str());
      EXPECT_TRUE(r.validated) << name << " " << r.name << ": " << r.rejection;
    }
    std::fflush(stdout);
  }
}

TEST(KernelBenchFixturesAdmission, EveryRegionValidatesOnTheGpu) {
  AC_REQUIRE_GPU();
  for (const char* name : {"triu_matmul", "gemm_batchnorm_f16", "cross_entropy", "triplet_margin", "sdpa_batched", "mse_loss", "instance_norm_f16", "batch_norm",
                           "gemm_dropout_softmax_f16", "random_draws"}) {
    SCOPED_TRACE(name);
    admit_fixture(*gpu, name);
  }
}

}  // namespace
}  // namespace agentcompile
