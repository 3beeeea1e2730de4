// On the GPU: every candidate of the prefill attention family (all tile shapes, not just the capped
// list, and the SIMT fallback) for the Qwen3-1.7B (NH=16, KV=8, D=128) and Llama-3.2-1B (NH=32,
// KV=8, D=64) attention regions, in f16 and bf16, is validated against the reference interpreter
// at a position offset, a ragged T whose cache ends inside a key tile, an odd offset, and T=2048,
// and timed (the fastest mma candidates also at T=20480, the long-prompt workload). TFLOP/s are the
// summary's causal FLOPs (counted from position 0) over the median time.
#include <algorithm>
#include <cstdio>

#include "gpu_test_support.h"

namespace agentcompile {
namespace {

struct Shape {
  tune::RegionBindings bindings;
  int seeds;
  int64_t long_T = 0;  // also time the fastest mma candidates at this T (pos 0), when set
};

double tflops(double flops, double us) { return us > 0 ? flops / (us * 1e-6) / 1e12 : 0.0; }

// Admits and times the attention_prefill candidates of the model's prefill attention region at each shape.
void admit_attention(const gpu::DeviceInfo& gpu, const std::string& config, ir::DType dtype, const std::vector<Shape>& shapes) {
  ir::Module module = testing::build_config_module(config, dtype);
  const ir::Function& prefill = *module.find_function("prefill");
  auto partition = analysis::form_regions(module, prefill);
  auto profile = plan::named_device_profile("h200");
  plan::PlannerOptions every;
  every.max_candidates = 32;
  for (const Shape& shape : shapes) {
    const tune::RegionBindings& b = shape.bindings;
    auto unique = analysis::unique_regions(module, prefill, partition, {b.T, b.L});
    auto plans = plan::plan_function(module, prefill, partition, unique, *profile, every);
    const plan::RegionPlan* attention = nullptr;
    for (const auto& plan : plans)
      if (plan.summary.category == analysis::Category::kAttentionPrefill) attention = &plan;
    EXPECT_NE(attention, nullptr) << config;
    if (!attention) return;
    std::vector<plan::Candidate> candidates;
    for (const auto& c : attention->candidates)
      if (c.family == "attention_prefill") candidates.push_back(c);
    EXPECT_GE(candidates.size(), 9u);

    const auto& region = partition.regions[static_cast<size_t>(attention->sites.front())];
    auto region_module = analysis::extract_region(module, prefill, region);
    EXPECT_TRUE(region_module.has_value()) << region_module.status().to_string();
    if (!region_module) return;
    auto cases = tune::build_region_cases(*region_module, b, shape.seeds, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    EXPECT_TRUE(cases.has_value()) << cases.status().to_string();
    if (!cases) return;
    auto compiled = testing::compile_candidates(candidates, gpu::nvrtc_arch(gpu));
    auto results = tune::admit_candidates(*region_module, b, *cases, candidates, compiled, tune::AdmitOptions{});
    EXPECT_TRUE(results.has_value()) << results.status().to_string();
    if (!results) return;

    const double flops = attention->summary.flops;
    std::printf("== %s %s attention_prefill T=%lld L=%lld pos=%d (%.3g GFLOP, %zu cases)\n", config.c_str(),
                std::string(ir::dtype_name(dtype)).c_str(), (long long)b.T, (long long)b.L, b.pos, flops / 1e9, cases->size());
    int validated = 0;
    const tune::CandidateResult* best = nullptr;
    for (const auto& r : *results) {
      validated += r.validated;
      std::printf("  %-4s %-58s %s err %.2e  %10.2f us  %7.2f TFLOP/s  %s\n", r.id.c_str(), r.name.c_str(),
                  r.validated ? "ok " : "REJ", r.max_rel_error, r.median_us, tflops(flops, r.median_us),
                  r.rejection.substr(0, 200).c_str());
      EXPECT_TRUE(r.validated) << r.name << ": " << r.rejection;
      if (r.validated && r.measured && (!best || r.median_us < best->median_us)) best = &r;
    }
    std::printf("  validated %d/%zu, best %.2f TFLOP/s (%s)\n", validated, results->size(),
                best ? tflops(flops, best->median_us) : 0.0, best ? best->name.c_str() : "-");
    if (shape.long_T == 0) continue;

    // The long-prompt size: the fastest few mma candidates here, timed again at long_T (random data,
    // no reference; uploading it per candidate is what costs, so only a few).
    std::vector<size_t> order;
    for (size_t i = 0; i < results->size(); ++i)
      if ((*results)[i].validated && (*results)[i].measured && !candidates[i].fallback) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return (*results)[x].median_us < (*results)[y].median_us; });
    order.resize(std::min<size_t>(order.size(), 4));
    std::vector<plan::Candidate> fastest;
    std::vector<codegen::CompileResult> fastest_compiled;
    for (size_t i : order) {
      fastest.push_back(candidates[i]);
      fastest_compiled.push_back(compiled[i]);
    }
    tune::AdmitOptions long_options;
    long_options.warmup = 2;
    long_options.repetitions = 10;
    long_options.timing = {tune::RegionBindings{shape.long_T, shape.long_T, 0}};
    auto long_results = tune::admit_candidates(*region_module, b, *cases, fastest, fastest_compiled, long_options);
    EXPECT_TRUE(long_results.has_value()) << long_results.status().to_string();
    if (!long_results) continue;
    const double long_flops = flops * (double(shape.long_T) * double(shape.long_T + 1)) / (double(b.T) * double(b.T + 1));  // T(T+1)/2
    std::printf("  at T=%lld (%.3g GFLOP):\n", (long long)shape.long_T, long_flops / 1e9);
    for (const auto& r : *long_results)
      std::printf("  %-4s %-58s %10.2f us  %7.2f TFLOP/s  %s\n", r.id.c_str(), r.name.c_str(), r.median_us,
                  tflops(long_flops, r.median_us), r.rejection.substr(0, 200).c_str());
  }
}

// Only the checkpoints' dtype (bf16) is also timed at 20k.
std::vector<Shape> shapes_for(ir::DType dtype) {
  return {
      {{96, 256, 32}, 3},   // queries at positions 32..127 over a cache that already holds 32 rows
      {{37, 48, 0}, 3},     // ragged T; the cache ends inside the first key tile of most shapes
      {{200, 300, 77}, 3},  // an offset on no tile boundary
      {{2048, 2048, 0}, 1, dtype == ir::DType::kBF16 ? 20480 : 0},  // one seed: the CPU reference is the slow part
  };
}

TEST(AttentionPrefill, Qwen3) {
  AC_REQUIRE_GPU();
  for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16}) admit_attention(*gpu, "qwen3-1.7b.json", dtype, shapes_for(dtype));
}

TEST(AttentionPrefill, Llama) {
  AC_REQUIRE_GPU();
  for (ir::DType dtype : {ir::DType::kBF16, ir::DType::kF16}) admit_attention(*gpu, "llama-3.2-1b.json", dtype, shapes_for(dtype));
}

}  // namespace
}  // namespace agentcompile
