// On the GPU: every kernel variant the decoder families gained for Gemma-3, Phi-3 and OLMo-2 against
// the reference interpreter, through admission (outputs poisoned with NaN before every run, inputs
// checked unchanged, several seeds and input distributions):
//   - decode attention over a grid of head dims 96/128/256, GQA 1/4/8, no window, a window inside the
//     context and one wider than it, f16 and bf16, with its KV-append prologue and without (the
//     caches as inputs); one Gemma-shaped case deep in a 32k cache, timed beside the same at 2k keys:
//     a windowed attention reads 512 keys at either;
//   - prefill attention over a grid (the mma kernel at 96 and 128, the SIMT kernel at every D),
//     windows that cut through key tiles, position offsets;
//   - every region of the decoder_modules.h layers, decode and prefill, at positions inside and past
//     the windows: the attention prologues (f32 per-head QK-norm, norms over the whole projection,
//     RoPE tables and scales), rope_kv at D = 96 and 256, GEMV/GEMM/cuBLAS with f32 norm prologues and
//     GELU(tanh) gates, the row regions.
// Every candidate of every family must validate: no variant here is numerically risky, so a rejection
// is a bug. Needs the interpreter's window, gelu and inv_freq/scale semantics (ir/ops.h).
#include <cmath>
#include <cstdio>

#include "decoder_modules.h"
#include "gpu_test_support.h"
#include "ir/text.h"

namespace agentcompile {
namespace {

struct Result {
  int candidates = 0, validated = 0;
  double best_us = 0;
};

// Plans `function`, then admits every region whose category is in `categories` (all when empty):
// every candidate validated on `seeds` seeds x 2 distributions, then timed.
Result admit_regions(const gpu::DeviceInfo& gpu, const std::string& what, const ir::Module& module, const std::string& function_name,
                     const tune::RegionBindings& b, const std::vector<analysis::Category>& categories, int seeds = 3,
                     const analysis::RegionOptions& region_options = {}, int max_candidates = 12) {
  Result total;
  const ir::Function* function = module.find_function(function_name);
  EXPECT_NE(function, nullptr) << what;
  if (!function) return total;
  auto partition = analysis::form_regions(module, *function, region_options);
  auto unique = analysis::unique_regions(module, *function, partition, {b.T, b.L});
  auto profile = plan::named_device_profile("h200");
  auto plans = plan::plan_function(module, *function, partition, unique, *profile, plan::PlannerOptions{max_candidates});
  for (const auto& plan : plans) {
    if (!categories.empty() && std::find(categories.begin(), categories.end(), plan.summary.category) == categories.end()) continue;
    std::printf("== %s %s r%d %s (T=%lld L=%lld pos=%d):", what.c_str(), function_name.c_str(), plan.unique_id,
                analysis::category_name(plan.summary.category), (long long)b.T, (long long)b.L, b.pos);
    for (const auto& op : plan.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("\n");
    EXPECT_FALSE(plan.candidates.empty()) << what << " r" << plan.unique_id << ": " << plan.unplanned_reason;
    if (plan.candidates.empty()) continue;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, *function, region);
    EXPECT_TRUE(region_module.has_value()) << what << ": " << region_module.status().to_string();
    if (!region_module) continue;
    auto cases = tune::build_region_cases(*region_module, b, seeds, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    EXPECT_TRUE(cases.has_value()) << what << ": " << cases.status().to_string();
    if (!cases) continue;
    auto compiled = testing::compile_candidates(plan.candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions options;
    options.repetitions = 10;
    auto results = tune::admit_candidates(*region_module, b, *cases, plan.candidates, compiled, options);
    EXPECT_TRUE(results.has_value()) << what << ": " << results.status().to_string();
    if (!results) continue;
    for (size_t i = 0; i < results->size(); ++i) {
      const tune::CandidateResult& r = (*results)[i];
      std::printf("  %-4s %-84s %s err %.2e %9.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ", r.max_rel_error,
                  r.median_us, r.rejection.substr(0, 200).c_str());
      ++total.candidates;
      total.validated += r.validated;
      EXPECT_TRUE(r.validated) << what << " " << function_name << " r" << plan.unique_id << " " << r.name << ": " << r.rejection;
      if (r.validated && r.measured && (total.best_us == 0 || r.median_us < total.best_us)) total.best_us = r.median_us;
    }
    std::fflush(stdout);  // keep what was seen if a time limit ends the run
  }
  EXPECT_GT(total.candidates, 0) << what << " " << function_name << ": no region of the categories asked for";
  return total;
}

// One attention layer: the k and v rows appended to the caches, then attention over them, as a
// `prefill` (T queries) and a `decode` (one) function.
ir::Module attention_module(ir::DType dtype, int64_t NH, int64_t KV, int64_t D, int64_t window) {
  const std::string dt(ir::dtype_name(dtype)), nh = std::to_string(NH), kv = std::to_string(KV), d = std::to_string(D);
  char scale[64];
  std::snprintf(scale, sizeof(scale), "%.17g", 1.0 / std::sqrt(static_cast<double>(D)));
  const std::string attrs = std::string("{scale = ") + scale + (window > 0 ? ", window = " + std::to_string(window) : "") + "}";
  std::string text = "module attn {\n  state @kv.0.k : " + dt + "[L, " + kv + ", " + d + "]\n  state @kv.0.v : " + dt + "[L, " + kv +
                     ", " + d + "]\n";
  for (const std::string r : {"T", "1"}) {
    const std::string rows = dt + "[" + r + ", ", cache = dt + "[L, " + kv + ", " + d + "]";
    text += std::string("  func @") + (r == "T" ? "prefill" : "decode") + "(%q: " + rows + nh + ", " + d + "], %k: " + rows + kv + ", " +
            d + "], %v: " + rows + kv + ", " + d + "], %pos: i32[]) -> (" + rows + nh + ", " + d + "]) {\n" +
            "    %0 = kv_append(%k, %pos) {state = \"kv.0.k\"} : " + cache + "\n" + "    %1 = kv_append(%v, %pos) {state = \"kv.0.v\"} : " +
            cache + "\n" + "    %2 = attention(%q, %0, %1, %pos) " + attrs + " : " + rows + nh + ", " + d + "]\n" + "    return %2\n  }\n";
  }
  text += "}\n";
  auto module = ir::parse_module(text, "attention_module");
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << text;
  return module ? std::move(module).value() : ir::Module{};
}

struct AttentionCase {
  int64_t D, NH, KV, window;
  ir::DType dtype;
  tune::RegionBindings b;
  std::string label() const {
    return "D=" + std::to_string(D) + " NH=" + std::to_string(NH) + " KV=" + std::to_string(KV) + " window=" + std::to_string(window) +
           " " + std::string(ir::dtype_name(dtype));
  }
};

const std::vector<analysis::Category> kDecodeAttention = {analysis::Category::kAttentionDecode};
const std::vector<analysis::Category> kPrefillAttention = {analysis::Category::kAttentionPrefill};

// Each head dim with each GQA ratio once, the window kinds and dtypes spread over them: windows of
// 37-300 keys end inside the context (mid-chunk, mid-tile), 5000 is wider than it.
TEST(DecoderAdmission, DecodeAttentionGrid) {
  AC_REQUIRE_GPU();
  const ir::DType f16 = ir::DType::kF16, bf16 = ir::DType::kBF16;
  for (const AttentionCase& c : {AttentionCase{96, 4, 4, 0, f16, {1, 2048, 1000}}, AttentionCase{96, 16, 4, 100, bf16, {1, 2048, 1000}},
                                 AttentionCase{96, 16, 2, 5000, f16, {1, 2048, 1000}}, AttentionCase{128, 8, 8, 300, bf16, {1, 4096, 3000}},
                                 AttentionCase{128, 16, 4, 0, f16, {1, 512, 200}}, AttentionCase{128, 32, 4, 37, f16, {1, 512, 77}},
                                 AttentionCase{256, 4, 4, 512, bf16, {1, 4096, 2000}}, AttentionCase{256, 4, 1, 512, f16, {1, 1024, 300}},
                                 AttentionCase{256, 8, 1, 0, bf16, {1, 2048, 1500}}, AttentionCase{96, 8, 8, 64, bf16, {1, 256, 0}}}) {
    const ir::Module module = attention_module(c.dtype, c.NH, c.KV, c.D, c.window);
    admit_regions(*gpu, c.label() + " with its append", module, "decode", c.b, kDecodeAttention);
    admit_regions(*gpu, c.label() + " over the caches", module, "decode", c.b, kDecodeAttention, 3,
                  analysis::RegionOptions{.attention_prologue = false});
  }
}

// A windowed decode reads the window's keys only: deep in a 32k cache it costs what it costs at 2k.
TEST(DecoderAdmission, WindowedDecodeCostStopsGrowing) {
  AC_REQUIRE_GPU();
  const ir::Module module = attention_module(ir::DType::kBF16, 4, 1, 256, 512);
  const Result near = admit_regions(*gpu, "Gemma-3 local layer", module, "decode", {1, 2048, 2000}, kDecodeAttention, 2);
  const Result deep = admit_regions(*gpu, "Gemma-3 local layer", module, "decode", {1, 32768, 30000}, kDecodeAttention, 2);
  std::printf("best at 2k keys %.2f us, at 30k keys %.2f us (both read 512)\n", near.best_us, deep.best_us);
}

TEST(DecoderAdmission, PrefillAttentionGrid) {
  AC_REQUIRE_GPU();
  const ir::DType f16 = ir::DType::kF16, bf16 = ir::DType::kBF16;
  for (const AttentionCase& c : {AttentionCase{96, 8, 8, 0, f16, {130, 256, 0}}, AttentionCase{96, 8, 2, 45, bf16, {200, 512, 70}},
                                 AttentionCase{96, 16, 2, 3000, f16, {64, 1024, 900}}, AttentionCase{128, 8, 8, 100, bf16, {300, 512, 50}},
                                 AttentionCase{128, 16, 4, 0, f16, {77, 128, 10}}, AttentionCase{128, 16, 2, 64, f16, {256, 256, 0}},
                                 AttentionCase{256, 4, 4, 0, bf16, {50, 64, 5}}, AttentionCase{256, 4, 1, 512, f16, {700, 1024, 100}},
                                 AttentionCase{256, 16, 2, 33, bf16, {90, 128, 0}}}) {
    const ir::Module module = attention_module(c.dtype, c.NH, c.KV, c.D, c.window);
    admit_regions(*gpu, c.label(), module, "prefill", c.b, kPrefillAttention);
  }
}

// Every region of the layers (bf16), decode and prefill, with positions past the windows (the
// prefill's 64 tokens keep the interpreter's share of the matmuls short). The folded Gemma form plans
// the raised form's kernels (tests/unit/decoder_families_test.cpp) except its row regions (f32 norm
// weights beside 16-bit rows), and the Phi-3 table layer differs from the theta one only in its RoPE.
TEST(DecoderAdmission, EveryRegionOfTheLayers) {
  AC_REQUIRE_GPU();
  const std::vector<analysis::Category> kRope = {analysis::Category::kAttentionDecode, analysis::Category::kAttentionPrefill,
                                                 analysis::Category::kRopeKvAppend};
  for (const auto& dm : testing::decoder_modules(ir::DType::kBF16)) {
    auto module = ir::parse_module(dm.text, dm.name);
    ASSERT_TRUE(module.has_value()) << module.status().to_string();
    const std::vector<analysis::Category> categories = dm.name == "gemma3"       ? std::vector<analysis::Category>{analysis::Category::kRmsNorm}
                                                       : dm.name == "phi3_table" ? kRope
                                                                                 : std::vector<analysis::Category>{};
    admit_regions(*gpu, dm.name + " bf16", *module, "decode", {1, 4096, 3000}, categories, 2);
    admit_regions(*gpu, dm.name + " bf16", *module, "prefill", {64, 4096, 2900}, categories, 2);
  }
}

// The attention and rope regions in f16 too, and inside the windows (positions below them, from 0).
TEST(DecoderAdmission, AttentionAndRopeRegionsEveryDtypeAndPosition) {
  AC_REQUIRE_GPU();
  const std::vector<analysis::Category> kDecode = {analysis::Category::kAttentionDecode};
  const std::vector<analysis::Category> kPrefill = {analysis::Category::kAttentionPrefill, analysis::Category::kRopeKvAppend};
  for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16})
    for (const auto& dm : testing::decoder_modules(dtype)) {
      if (dm.name == "gemma3") continue;  // the raised form's kernels
      auto module = ir::parse_module(dm.text, dm.name);
      ASSERT_TRUE(module.has_value()) << module.status().to_string();
      const std::string what = dm.name + " " + std::string(ir::dtype_name(dtype));
      if (dtype == ir::DType::kF16) {
        admit_regions(*gpu, what, *module, "decode", {1, 4096, 3000}, kDecode, 2);
        admit_regions(*gpu, what, *module, "prefill", {64, 4096, 2900}, kPrefill, 2);
      }
      admit_regions(*gpu, what, *module, "decode", {1, 1024, 100}, kDecode, 2);
      admit_regions(*gpu, what, *module, "prefill", {96, 256, 0}, kPrefill, 2);
    }
}

}  // namespace
}  // namespace agentcompile
