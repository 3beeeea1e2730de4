// On the GPU: the residual-norm prologue regions of sandwich_modules.h (Gemma's post-norm, residual
// add and next pre-norm before a GEMV) over a grid of hidden sizes (K 1152, 2048), row counts (N 64
// to 8192), dtypes, norm weights (f32 or the activation dtype) and cast forms: every candidate, GEMV
// and the cuBLAS fallback, is validated against the interpreter on 3 seeds x 2 distributions with
// its outputs (h included) poisoned with NaN, and timed. A planted GEMV that never writes h is
// rejected: h is compared like every other output.
#include <cstdio>

#include "gpu_test_support.h"
#include "ir/text.h"
#include "sandwich_modules.h"

namespace agentcompile {
namespace {

struct FusedRegion {
  plan::RegionPlan plan;
  ir::Module region_module;
  std::vector<tune::RegionCase> cases;
};

const tune::RegionBindings kBindings{1, 256, 5};

// The regions of the module's decode that carry a residual-norm prologue, with their cases.
std::vector<FusedRegion> fused_regions(const testing::SandwichShape& shape) {
  auto module = ir::parse_module(testing::sandwich_module(shape), "sandwich");
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  if (!module) return {};
  const ir::Function& decode = module->functions.front();
  auto partition = analysis::form_regions(*module, decode);
  auto unique = analysis::unique_regions(*module, decode, partition, {1, 2048});
  auto profile = plan::named_device_profile("h200");
  plan::PlannerOptions wide;
  wide.max_candidates = 12;
  std::vector<FusedRegion> out;
  for (auto& plan : plan::plan_function(*module, decode, partition, unique, *profile, wide)) {
    if (plan.candidates.empty() || !plan.candidates.front().match.facts.count("post_norm")) continue;
    auto region_module = analysis::extract_region(*module, decode, partition.regions[static_cast<size_t>(plan.sites.front())]);
    EXPECT_TRUE(region_module.has_value()) << region_module.status().to_string();
    if (!region_module) continue;
    auto cases = tune::build_region_cases(*region_module, kBindings, 3, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    EXPECT_TRUE(cases.has_value()) << cases.status().to_string();
    if (!cases) continue;
    out.push_back({std::move(plan), std::move(*region_module), std::move(*cases)});
  }
  return out;
}

std::string label(const testing::SandwichShape& s) {
  return std::string(ir::dtype_name(s.dtype)) + " K=" + std::to_string(s.K) + " N=" + std::to_string(s.N) +
         (s.norm_f32 ? " f32 norm weights" : "") + (s.casts ? " casts" : " folded");
}

TEST(ResidualNormAdmission, EveryCandidateValidatesOverTheGrid) {
  AC_REQUIRE_GPU();
  const ir::DType f16 = ir::DType::kF16, bf16 = ir::DType::kBF16;
  for (const testing::SandwichShape& shape :
       {testing::SandwichShape{.dtype = f16, .K = 1152, .N = 256, .norm_f32 = true, .casts = true},
        testing::SandwichShape{.dtype = bf16, .K = 1152, .N = 6912, .norm_f32 = true, .casts = true},
        testing::SandwichShape{.dtype = f16, .K = 2048, .N = 8192, .norm_f32 = false, .casts = false},
        testing::SandwichShape{.dtype = bf16, .K = 2048, .N = 64, .norm_f32 = false, .casts = true},
        testing::SandwichShape{.dtype = f16, .K = 2048, .N = 1024, .norm_f32 = true, .casts = false}}) {
    SCOPED_TRACE(label(shape));
    const auto regions = fused_regions(shape);
    ASSERT_EQ(regions.size(), 2u) << "the gate/up region (h an output) and the q/k region (h inside)";
    for (const auto& region : regions) {
      auto compiled = testing::compile_candidates(region.plan.candidates, gpu::nvrtc_arch(*gpu));
      auto results = tune::admit_candidates(region.region_module, kBindings, region.cases, region.plan.candidates, compiled, tune::AdmitOptions{});
      ASSERT_TRUE(results.has_value()) << results.status().to_string();
      std::printf("%s r%d:", label(shape).c_str(), region.plan.unique_id);
      for (const auto& op : region.plan.summary.op_sequence) std::printf(" %s", op.c_str());
      std::printf("\n");
      int gemv = 0, library = 0;
      for (size_t i = 0; i < results->size(); ++i) {
        const auto& r = (*results)[i];
        std::printf("  %-4s %-72s %-9s err %.2e  median %8.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "valid" : "REJECTED",
                    r.max_rel_error, r.median_us, r.rejection.c_str());
        EXPECT_TRUE(r.validated) << r.name << ": " << r.rejection;
        EXPECT_GE(r.cases, 6) << r.name;
        gemv += region.plan.candidates[i].family == "gemv";
        library += region.plan.candidates[i].family == "cublas";
      }
      EXPECT_GT(gemv, 0);
      EXPECT_EQ(library, 1);
    }
  }
}

TEST(ResidualNormAdmission, AGemvThatDropsHIsRejected) {
  AC_REQUIRE_GPU();
  const auto regions = fused_regions({});
  const FusedRegion* gate_up = nullptr;
  for (const auto& region : regions)
    if (region.plan.candidates.front().match.roles.count("h")) gate_up = &region;
  ASSERT_NE(gate_up, nullptr);
  const plan::Candidate& real = gate_up->plan.candidates.front();
  ASSERT_EQ(real.family, "gemv");
  auto source = codegen::render_source(real);
  ASSERT_TRUE(source.has_value()) << source.status().to_string();
  const std::string h_line = "p.h = static_cast<__half*>(a.out[0]);";
  const size_t at = source->find(h_line);
  ASSERT_NE(at, std::string::npos) << *source;
  std::string dropped = *source;
  dropped.replace(at, h_line.size(), "p.h = nullptr;");
  // The same kernel under its own name, so the two builds stay apart.
  const std::string kernel = real.launches.front().kernel, renamed = "planted_" + kernel;
  for (size_t pos = dropped.find(kernel); pos != std::string::npos; pos = dropped.find(kernel, pos + renamed.size()))
    dropped.replace(pos, kernel.size(), renamed);
  plan::Candidate planted = real;
  planted.id = "planted";
  planted.spelled_name = renamed;
  planted.launches.front().kernel = renamed;
  codegen::NvrtcOptions options;
  options.arch = gpu::nvrtc_arch(*gpu);
  options.isolate = true;
  auto compiled = codegen::compile_all({{renamed, dropped}, {real.name(), *source}}, options);
  ASSERT_TRUE(compiled.has_value()) << compiled.status().to_string();
  auto results = tune::admit_candidates(gate_up->region_module, kBindings, gate_up->cases, {planted, real}, *compiled, tune::AdmitOptions{});
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  EXPECT_FALSE((*results)[0].validated);
  EXPECT_NE((*results)[0].rejection.find("NaN"), std::string::npos) << (*results)[0].rejection;
  EXPECT_TRUE((*results)[1].validated) << (*results)[1].rejection;
}

}  // namespace
}  // namespace agentcompile
