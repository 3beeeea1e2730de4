// On the GPU: the regions of the synthetic modules in tests/unit/rowwise_modules.h (fused
// residual + rmsnorm, gated rmsnorm, masked and vocabulary softmax, sum/mean/max/argmax reductions,
// broadcasting pointwise chains), and the rmsnorm and embedding regions of the Qwen3/Llama graphs,
// are planned, compiled, validated against the reference interpreter and timed, as
// tests/gpu/region_admission_test.cpp does for every region of the model graphs (that test admits
// all families and runs for minutes; this one covers the row-wise families alone, quickly). Every
// candidate of a row-wise family must validate: these kernels have no numerically risky variants,
// so a rejection is a bug. Each region prints its best latency and the bandwidth it achieves
// (summary bytes / time).
#include <cstdio>
#include <set>

#include "gpu_test_support.h"
#include "rowwise_modules.h"

namespace agentcompile {
namespace {

const std::set<std::string> kRowwise = {"rmsnorm", "embedding", "elementwise", "softmax", "reduction"};

// Admits the regions of `function` that a row-wise family matched.
void admit_function(const gpu::DeviceInfo& gpu, const std::string& label, const ir::Module& module,
                    const ir::Function& function, tune::RegionBindings bindings, int seeds, bool gathers = true) {
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {bindings.T, bindings.L});
  auto profile = plan::named_device_profile("h200");
  auto plans = plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
  for (const auto& plan : plans) {
    bool mine = false;
    for (const auto& family : plan.families_matched) mine |= kRowwise.count(family) > 0;
    if (!mine || (!gathers && plan.summary.category == analysis::Category::kGather)) continue;
    std::printf("== %s r%d (T=%lld) %s, %.3g bytes:", label.c_str(), plan.unique_id, (long long)bindings.T,
                analysis::category_name(plan.summary.category), plan.summary.bytes);
    for (const auto& op : plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("\n");
    ASSERT_FALSE(plan.candidates.empty()) << label << ": " << plan.unplanned_reason;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, function, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, bindings, seeds, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
    auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions options;
    options.repetitions = 20;
    auto results = tune::admit_candidates(*region_module, bindings, *cases, plan.candidates, compiled, options);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();
    double best = 0;
    for (size_t i = 0; i < results->size(); ++i) {
      const auto& r = (*results)[i];
      std::printf("  %-4s %-64s %s err %.2e  %9.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ",
                  r.max_rel_error, r.median_us, r.rejection.substr(0, 160).c_str());
      EXPECT_TRUE(r.validated) << label << " " << r.name << ": " << r.rejection;
      if (r.validated && r.measured && (best == 0 || r.median_us < best)) best = r.median_us;
    }
    if (best > 0) std::printf("  best %.2f us, %.1f GB/s\n", best, plan.summary.bytes / (best * 1e3));
    std::fflush(stdout);
  }
}

TEST(RowwiseAdmission, SyntheticRegions) {
  AC_REQUIRE_GPU();
  for (const auto& m : testing::rowwise_modules()) {
    ASSERT_EQ(m.module.functions.size(), 1u) << m.name << " did not build";
    admit_function(*gpu, m.name, m.module, m.module.functions.front(), {96, 256, 0}, 3);
    bool per_token = false;
    for (const auto& function : m.module.functions)
      for (ir::ValueId arg : function.args)
        for (const ir::Dim& dim : function.type(arg).shape) per_token |= dim.symbol == ir::Symbol::kT;
    if (per_token) admit_function(*gpu, m.name, m.module, m.module.functions.front(), {1, 256, 0}, 3);  // one token
  }
}

// The model graphs' norm and embedding regions, at region_admission_test's bindings. Admission
// uploads the weights per case and candidate, which for a 0.5-0.6 GB embedding table takes about
// 2 minutes a region: tables are admitted once per dtype (f16 decode, bf16 prefill), with 2 seeds.
TEST(RowwiseAdmission, ModelRegions) {
  AC_REQUIRE_GPU();
  struct Graph {
    const char* config;
    ir::DType dtype;
    const char* function;
    tune::RegionBindings bindings;
    bool gathers;
  };
  for (const Graph& g : {Graph{"qwen3-1.7b.json", ir::DType::kF16, "decode", {1, 512, 77}, true},
                         Graph{"llama-3.2-1b.json", ir::DType::kBF16, "prefill", {80, 256, 0}, true},
                         Graph{"qwen3-1.7b.json", ir::DType::kF16, "prefill", {96, 256, 32}, false},
                         Graph{"llama-3.2-1b.json", ir::DType::kBF16, "decode", {1, 512, 300}, false}}) {
    const ir::Module module = testing::build_config_module(g.config, g.dtype);
    const std::string label = std::string(g.config) + " " + std::string(ir::dtype_name(g.dtype)) + " " + g.function;
    admit_function(*gpu, label, module, *module.find_function(g.function), g.bindings, 2, g.gathers);
  }
}

}  // namespace
}  // namespace agentcompile
