// On the GPU: every decode GEMV candidate of Qwen3-1.7B (f16) is compiled, validated against the
// reference interpreter and timed; planted broken candidates are rejected for the right reason.
#include <cstdio>

#include "gpu_test_support.h"

namespace agentcompile {
namespace {

struct Admitted {
  plan::RegionPlan plan;
  std::vector<tune::CandidateResult> results;
};

std::vector<Admitted> admit_gemv_regions(const gpu::DeviceInfo& gpu) {
  ir::Module module = testing::build_config_module("qwen3-1.7b.json", ir::DType::kF16);
  const ir::Function& decode = *module.find_function("decode");
  auto partition = analysis::form_regions(module, decode);
  auto unique = analysis::unique_regions(module, decode, partition, {1, 2048});
  auto profile = plan::named_device_profile("h200");
  plan::PlannerOptions wide;
  wide.max_candidates = 16;  // look past the default cap to see how the heuristic order fares
  auto plans = plan::plan_function(module, decode, partition, unique, *profile, wide);
  std::vector<Admitted> out;
  for (auto& plan : plans) {
    if (plan.candidates.empty() || plan.candidates.front().family != "gemv") continue;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, decode, region);
    EXPECT_TRUE(region_module.has_value()) << region_module.status().to_string();
    tune::RegionBindings bindings{1, 256, 5};
    auto cases = tune::build_region_cases(*region_module, bindings, 3, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    EXPECT_TRUE(cases.has_value()) << cases.status().to_string();
    auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(gpu));
    auto results = tune::admit_candidates(*region_module, bindings, *cases, plan.candidates, compiled, tune::AdmitOptions{});
    EXPECT_TRUE(results.has_value()) << results.status().to_string();
    out.push_back({plan, results ? *results : std::vector<tune::CandidateResult>{}});
  }
  return out;
}

TEST(GemvAdmission, EveryRegionHasValidatedCandidatesAndTimings) {
  AC_REQUIRE_GPU();
  auto bandwidth = gpu::measure_copy_bandwidth_gbs();
  ASSERT_TRUE(bandwidth.has_value()) << bandwidth.status().to_string();
  std::printf("device: %s, copy bandwidth %.0f GB/s\n", gpu->name.c_str(), *bandwidth);
  auto admitted = admit_gemv_regions(*gpu);
  ASSERT_EQ(admitted.size(), 5u);
  for (const auto& a : admitted) {
    int validated = 0;
    const double bytes = a.plan.summary.bytes;
    std::printf("r%d %s  ops:", a.plan.unique_id, analysis::category_name(a.plan.summary.category));
    for (const auto& op : a.plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("  (%.1f MB)\n", bytes / 1e6);
    for (const auto& r : a.results) {
      validated += r.validated;
      std::printf("  %-4s %-52s %-9s err %.2e  median %8.2f us [%7.2f, %7.2f]  %6.0f GB/s (%3.0f%% of copy)  %s\n", r.id.c_str(),
                  r.name.c_str(), r.validated ? "valid" : "REJECTED", r.max_rel_error, r.median_us, r.p10_us, r.p90_us,
                  r.measured ? bytes / (r.median_us * 1e-6) / 1e9 : 0.0,
                  r.measured ? 100.0 * bytes / (r.median_us * 1e-6) / 1e9 / *bandwidth : 0.0, r.rejection.c_str());
      EXPECT_TRUE(r.validated) << r.name << ": " << r.rejection;
      if (r.validated) {
        EXPECT_GE(r.cases, 6);
      }
    }
    EXPECT_GT(validated, 0);
  }
}

// A hand-written candidate for the down_proj + residual region with a body that misbehaves.
plan::Candidate planted(const plan::Candidate& like, const std::string& name) {
  plan::Candidate c = like;
  c.id = name;
  c.family = "planted";
  c.spelled_name = name;
  c.launches = {plan::Launch{name, {0, 1, 1}, {0, 1, 1}, {0, 1, 1}, 128, 0, false, {}}};
  return c;
}

TEST(GemvAdmission, PlantedBrokenCandidatesAreRejectedWithTheRightReason) {
  AC_REQUIRE_GPU();
  ir::Module module = testing::build_config_module("qwen3-1.7b.json", ir::DType::kF16);
  const ir::Function& decode = *module.find_function("decode");
  auto partition = analysis::form_regions(module, decode);
  auto unique = analysis::unique_regions(module, decode, partition, {1, 2048});
  auto profile = plan::named_device_profile("h200");
  auto plans = plan::plan_function(module, decode, partition, unique, *profile, plan::PlannerOptions{});
  const plan::RegionPlan* down = nullptr;
  for (const auto& plan : plans)
    if (plan.summary.op_sequence == std::vector<std::string>{"linear", "add"} && plan.summary.params[0].shape[1].value == 6144) down = &plan;
  ASSERT_NE(down, nullptr);
  const auto& region = partition.regions[static_cast<size_t>(down->sites.front())];
  auto region_module = analysis::extract_region(module, decode, region);
  ASSERT_TRUE(region_module.has_value());
  tune::RegionBindings bindings{1, 64, 0};
  auto cases = tune::build_region_cases(*region_module, bindings, 3, {tune::Distribution::kNormal, tune::Distribution::kUniform});
  ASSERT_TRUE(cases.has_value());

  const std::string head = "#include \"common.cuh\"\nextern \"C\" __global__ void ";
  // out = residual + 0 (wrong numbers), never written (NaN poison stays), written far out of bounds, and not C++.
  const std::string wrong = head + "wrong(const ac::RegionArgs a) { const __half* r = (const __half*)a.in[1]; __half* y = (__half*)a.out[0];"
                                   " for (int i = threadIdx.x; i < 2048; i += blockDim.x) y[i] = r[i]; }\n";
  const std::string lazy = head + "lazy(const ac::RegionArgs a) { }\n";
  const std::string wild = head + "wild(const ac::RegionArgs a) { __half* y = (__half*)a.out[0]; y[(1ll << 40) + threadIdx.x] = __float2half(1.f); }\n";
  const std::string broken = head + "broken(const ac::RegionArgs a) { this is not cuda }\n";
  const plan::Candidate& like = down->candidates.front();
  std::vector<plan::Candidate> candidates = {planted(like, "wrong"), planted(like, "lazy"), planted(like, "wild"),
                                             planted(like, "broken"), like};
  codegen::NvrtcOptions options;
  options.arch = gpu::nvrtc_arch(*gpu);
  options.isolate = true;
  auto real_source = codegen::render_source(like);
  ASSERT_TRUE(real_source.has_value());
  auto compiled = codegen::compile_all({{"wrong", wrong}, {"lazy", lazy}, {"wild", wild}, {"broken", broken}, {like.name(), *real_source}}, options);
  ASSERT_TRUE(compiled.has_value());
  auto results = tune::admit_candidates(*region_module, bindings, *cases, candidates, *compiled, tune::AdmitOptions{});
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  for (const auto& r : *results) std::printf("  %-8s %s\n", r.id.c_str(), r.validated ? "valid" : r.rejection.substr(0, 140).c_str());
  EXPECT_NE((*results)[0].rejection.find("wrong numbers"), std::string::npos) << (*results)[0].rejection;
  EXPECT_NE((*results)[1].rejection.find("NaN"), std::string::npos) << (*results)[1].rejection;
  EXPECT_TRUE((*results)[2].faulted) << (*results)[2].rejection;
  EXPECT_NE((*results)[3].rejection.find("compile error"), std::string::npos) << (*results)[3].rejection;
  EXPECT_TRUE((*results)[4].validated) << "the real candidate after the fault: " << (*results)[4].rejection;
}

}  // namespace
}  // namespace agentcompile
