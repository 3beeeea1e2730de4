// On the GPU: the attention_reference fallback is validated against the reference interpreter
//   - on the tiny checkpoints' attention regions (head_dim 16 and 32, GQA 2 and 4), each in f32, f16
//     and bf16: prefill at a position offset whose keys cross a tile, prefill from 0, decode deep in
//     the cache and decode of the first token;
//   - on one-layer attention modules of head dimensions the fast families do not take (48, 80, 96,
//     and 13 and 100, not multiples of 8) and those they do (128, 256), in every dtype;
//   - on the Qwen3-1.7B and Llama-3.2-1B attention regions, timed beside the fast families'
//     candidates at a long prompt and a deep decode, to see what falling back costs.
// And every region of the tiny checkpoints, in every dtype, admits a candidate (the f32 rope_kv and
// cuBLAS paths included), so the whole model can run.
#include <cmath>
#include <cstdio>

#include "gpu_test_support.h"
#include "ir/text.h"

namespace agentcompile {
namespace {

constexpr ir::DType kDtypes[] = {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16};

ir::Module build_fixture_module(const std::string& config_path, ir::DType dtype) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/" + config_path);
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  config->dtype = dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return std::move(module).value();
}

// One attention layer: k/v appends, then attention over the cache; `prefill` (T queries) and `decode`.
ir::Module attention_module(ir::DType dtype, int64_t NH, int64_t KV, int64_t D) {
  const std::string dt(ir::dtype_name(dtype)), nh = std::to_string(NH), kv = std::to_string(KV), d = std::to_string(D);
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%.17g", 1.0 / std::sqrt(static_cast<double>(D)));
  std::string text = "module attn {\n  state @kv.0.k : " + dt + "[L, " + kv + ", " + d + "]\n  state @kv.0.v : " + dt + "[L, " + kv +
                     ", " + d + "]\n";
  for (const std::string r : {"T", "1"}) {
    text += std::string("  func @") + (r == "T" ? "prefill" : "decode") + "(%q: " + dt + "[" + r + ", " + nh + ", " + d + "], %k: " +
            dt + "[" + r + ", " + kv + ", " + d + "], %v: " + dt + "[" + r + ", " + kv + ", " + d + "], %pos: i32[]) -> (" + dt + "[" +
            r + ", " + nh + ", " + d + "]) {\n" + "    %0 = kv_append(%k, %pos) {state = \"kv.0.k\"} : " + dt + "[L, " + kv + ", " +
            d + "]\n" + "    %1 = kv_append(%v, %pos) {state = \"kv.0.v\"} : " + dt + "[L, " + kv + ", " + d + "]\n" +
            "    %2 = attention(%q, %0, %1, %pos) {scale = " + scale + "} : " + dt + "[" + r + ", " + nh + ", " + d + "]\n" +
            "    return %2\n  }\n";
  }
  text += "}\n";
  auto module = ir::parse_module(text, "attention_module");
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << text;
  return module ? std::move(module).value() : ir::Module{};
}

struct Admitted {
  bool ok = false;
  double reference_us = 0;
};

// Plans the function's attention region at `b`, admits its attention_reference candidate (and, with
// `with_fast`, every other candidate of the region too, for timing beside it) on 3 seeds x 3
// distributions; `timing` times validated candidates at other sizes (random data, no reference).
Admitted admit_reference(const gpu::DeviceInfo& gpu, const ir::Module& module, const std::string& function_name,
                         const tune::RegionBindings& b, const std::string& what, bool with_fast = false,
                         std::vector<tune::RegionBindings> timing = {}) {
  Admitted admitted;
  const ir::Function* function = module.find_function(function_name);
  EXPECT_NE(function, nullptr) << what;
  if (!function) return admitted;
  auto partition = analysis::form_regions(module, *function);
  auto unique = analysis::unique_regions(module, *function, partition, {b.T, b.L});
  auto profile = plan::named_device_profile("h200");
  auto plans = plan::plan_function(module, *function, partition, unique, *profile, plan::PlannerOptions{});
  const plan::RegionPlan* attention = nullptr;
  for (const auto& plan : plans)
    if (plan.summary.category == analysis::Category::kAttentionPrefill || plan.summary.category == analysis::Category::kAttentionDecode)
      attention = &plan;
  EXPECT_NE(attention, nullptr) << what;
  if (!attention) return admitted;
  std::vector<plan::Candidate> candidates;
  for (const auto& c : attention->candidates)
    if (with_fast || c.family == "attention_reference") candidates.push_back(c);
  size_t references = 0;
  for (const auto& c : candidates) references += c.family == "attention_reference";
  EXPECT_EQ(references, 1u) << what;
  if (references != 1) return admitted;

  const auto& region = partition.regions[static_cast<size_t>(attention->sites.front())];
  auto region_module = analysis::extract_region(module, *function, region);
  EXPECT_TRUE(region_module.has_value()) << what << ": " << region_module.status().to_string();
  if (!region_module) return admitted;
  auto cases = tune::build_region_cases(*region_module, b, 3,
                                        {tune::Distribution::kNormal, tune::Distribution::kUniform, tune::Distribution::kHeavyTailed});
  EXPECT_TRUE(cases.has_value()) << what << ": " << cases.status().to_string();
  if (!cases) return admitted;
  auto compiled = testing::compile_candidates(candidates, gpu::nvrtc_arch(gpu));
  tune::AdmitOptions options;
  options.repetitions = 10;
  options.timing = std::move(timing);
  auto results = tune::admit_candidates(*region_module, b, *cases, candidates, compiled, options);
  EXPECT_TRUE(results.has_value()) << what << ": " << results.status().to_string();
  if (!results) return admitted;

  std::printf("== %s T=%lld L=%lld pos=%d (%zu cases)\n", what.c_str(), (long long)b.T, (long long)b.L, b.pos, cases->size());
  for (size_t i = 0; i < results->size(); ++i) {
    const tune::CandidateResult& r = (*results)[i];
    std::printf("  %-4s %-62s %s err %.2e ", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ", r.max_rel_error);
    for (const auto& t : r.timings) std::printf(" %9.2f us (T=%lld L=%lld)", t.median_us, (long long)t.bindings.T, (long long)t.bindings.L);
    std::printf("  %s\n", r.rejection.substr(0, 200).c_str());
    if (candidates[i].family == "attention_reference") {
      EXPECT_TRUE(r.compiled) << what << " " << r.name << ": " << r.rejection;
      EXPECT_TRUE(r.validated) << what << " " << r.name << ": " << r.rejection;
      EXPECT_FALSE(r.faulted) << what << " " << r.name;
      admitted.ok = r.validated;
      admitted.reference_us = r.median_us;
    }
  }
  return admitted;
}

TEST(AttentionReference, TinyCheckpointsEveryDtype) {
  AC_REQUIRE_GPU();
  for (const char* config : {"tests/fixtures/configs/tiny-llama.json", "tests/fixtures/configs/tiny-qwen2.json",
                             "tests/fixtures/configs/tiny-qwen3.json"})
    for (ir::DType dtype : kDtypes) {
      const ir::Module module = build_fixture_module(config, dtype);
      const std::string what = std::string(config) + " " + std::string(ir::dtype_name(dtype));
      admit_reference(*gpu, module, "prefill", {40, 256, 150}, what + " prefill");  // keys 151..190: two 128-key tiles
      admit_reference(*gpu, module, "prefill", {37, 48, 0}, what + " prefill");     // from position 0, a ragged T
      admit_reference(*gpu, module, "prefill", {1, 64, 5}, what + " prefill");      // a one-token chunk
      admit_reference(*gpu, module, "decode", {1, 256, 200}, what + " decode");     // 201 keys
      admit_reference(*gpu, module, "decode", {1, 64, 0}, what + " decode");        // the first token: one key
    }
}

// Every region of the tiny checkpoints, in every dtype, admits at least one candidate: with the
// reference attention and the f32 rope_kv / cuBLAS paths, the whole model can run.
TEST(AttentionReference, TinyCheckpointsEveryRegionAdmits) {
  AC_REQUIRE_GPU();
  for (const char* config : {"tests/fixtures/configs/tiny-llama.json", "tests/fixtures/configs/tiny-qwen2.json",
                             "tests/fixtures/configs/tiny-qwen3.json"})
    for (ir::DType dtype : kDtypes)
      for (const auto& [function_name, b] : {std::pair<const char*, tune::RegionBindings>{"prefill", {40, 256, 150}},
                                             std::pair<const char*, tune::RegionBindings>{"decode", {1, 256, 200}}}) {
        const ir::Module module = build_fixture_module(config, dtype);
        const ir::Function& function = *module.find_function(function_name);
        auto partition = analysis::form_regions(module, function);
        auto unique = analysis::unique_regions(module, function, partition, {b.T, b.L});
        auto profile = plan::named_device_profile("h200");
        auto plans = plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
        const std::string what = std::string(config) + " " + std::string(ir::dtype_name(dtype)) + " " + function_name;
        std::printf("== %s (T=%lld, L=%lld, pos=%d)\n", what.c_str(), (long long)b.T, (long long)b.L, b.pos);
        for (const auto& plan : plans) {
          EXPECT_FALSE(plan.candidates.empty()) << what << " r" << plan.unique_id << ": " << plan.unplanned_reason;
          if (plan.candidates.empty()) continue;
          const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
          auto region_module = analysis::extract_region(module, function, region);
          ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
          auto cases = tune::build_region_cases(*region_module, b, 2, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
          ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
          auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(*gpu));
          tune::AdmitOptions options;
          options.measure = false;
          auto results = tune::admit_candidates(*region_module, b, *cases, plan.candidates, compiled, options);
          ASSERT_TRUE(results.has_value()) << results.status().to_string();
          int validated = 0;
          std::string rejected;
          for (size_t i = 0; i < results->size(); ++i) {
            const tune::CandidateResult& r = (*results)[i];
            validated += r.validated;
            if (!r.validated) rejected += "\n    " + r.name + ": " + r.rejection.substr(0, 200);
            if (plan.candidates[i].fallback) {
              EXPECT_TRUE(r.validated) << what << " r" << plan.unique_id << " fallback " << r.name << ": " << r.rejection;
            }
          }
          std::printf("  r%-3d %-18s %d/%zu validated%s\n", plan.unique_id, analysis::category_name(plan.summary.category), validated,
                      results->size(), rejected.c_str());
          EXPECT_GT(validated, 0) << what << " r" << plan.unique_id << ": no candidate validated";
        }
      }
}

TEST(AttentionReference, HeadDimsTheFastFamiliesDoNotTake) {
  AC_REQUIRE_GPU();
  struct Shape {
    int64_t D, NH, KV;
  };
  for (const Shape& s : {Shape{48, 8, 2}, Shape{80, 4, 4}, Shape{96, 6, 2}, Shape{13, 3, 1}, Shape{100, 4, 2}, Shape{128, 8, 2},
                         Shape{256, 4, 2}})
    for (ir::DType dtype : kDtypes) {
      const ir::Module module = attention_module(dtype, s.NH, s.KV, s.D);
      const std::string what = "D=" + std::to_string(s.D) + " NH=" + std::to_string(s.NH) + " KV=" + std::to_string(s.KV) + " " +
                               std::string(ir::dtype_name(dtype));
      admit_reference(*gpu, module, "prefill", {50, 300, 77}, what + " prefill");
      admit_reference(*gpu, module, "decode", {1, 300, 250}, what + " decode");
    }
}

// The presets: the reference beside the fast candidates, validated at a chunk offset, timed at a
// 2048-token prompt and at decode over 4096 keys.
TEST(AttentionReference, PresetsBesideTheFastFamilies) {
  AC_REQUIRE_GPU();
  for (const char* config : {"configs/qwen3-1.7b.json", "configs/llama-3.2-1b.json"})
    for (ir::DType dtype : {ir::DType::kBF16, ir::DType::kF16}) {
      const ir::Module module = build_fixture_module(config, dtype);
      const std::string what = std::string(config) + " " + std::string(ir::dtype_name(dtype));
      admit_reference(*gpu, module, "prefill", {96, 256, 32}, what + " prefill", true,
                      {tune::RegionBindings{96, 256, 32}, tune::RegionBindings{2048, 2048, 0}});
      admit_reference(*gpu, module, "decode", {1, 512, 300}, what + " decode", true,
                      {tune::RegionBindings{1, 512, 300}, tune::RegionBindings{1, 4096, 4095}});
    }
}

}  // namespace
}  // namespace agentcompile
