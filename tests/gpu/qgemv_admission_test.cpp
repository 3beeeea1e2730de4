// On the GPU: the quantized GEMV family and the cuBLAS fallback of quantized matmuls (weights
// dequantized into the workspace, then the GEMM) against the reference interpreter's dequantization,
// over a grid of shapes and seeds. Every planned qgemv and cublas candidate of the quantized matmul
// regions of Qwen3-1.7B
// and Llama-3.2-1B (decode at one token with the norm prologues and every epilogue; prefill at T = 7
// block rows) in int8 and int4 formats, and of single linears of assorted N and K, is compiled,
// validated on 3 seeds x 2 input distributions (tune::admit_candidates: the interpreter dequantizes
// the same packed bytes the kernel reads) and timed; each must validate. The tensor-core kernel
// (qgemv_mma.cuh, int4 groups with f16 activations) is among them, and has tests of its own: every
// epilogue and the norm prologue at 1, 3 and T tokens in every int4 format, K that is not a multiple
// of its 128-element slab, and every schedule of two regions.
#include <cstdio>

#include "frontend/weight_formats.h"
#include "gpu_test_support.h"
#include "ir/text.h"
#include "qgemv_modules.h"

namespace agentcompile {
namespace {

struct Checked {
  int regions = 0, candidates = 0, validated = 0;
};

bool is_mma(const plan::Candidate& c) { return c.params.count("mma") > 0; }

// Plans `function` of `module` (at most `cap` candidates a region), and admits the qgemv candidates
// that `wanted` takes (and the cuBLAS ones) of every region that has such candidates at T = `tokens`.
Checked admit_qgemv(const ir::Module& module, const std::string& function_name, int64_t tokens, const gpu::DeviceInfo& gpu,
                    const std::string& label, int cap = 16, bool (*wanted)(const plan::Candidate&) = nullptr) {
  Checked checked;
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {tokens, 256});
  auto profile = plan::named_device_profile("h200");
  plan::PlannerOptions wide;
  wide.max_candidates = cap;
  for (auto& plan : plan::plan_function(module, function, partition, unique, *profile, wide)) {
    std::vector<plan::Candidate> qgemv;
    for (const auto& c : plan.candidates)
      if (c.family == "qgemv" && (!wanted || wanted(c))) qgemv.push_back(c);
    if (qgemv.empty()) continue;
    for (const auto& c : plan.candidates)
      if (c.family == "cublas") qgemv.push_back(c);
    ++checked.regions;
    const auto& region = partition.regions[static_cast<size_t>(plan.sites.front())];
    auto region_module = analysis::extract_region(module, function, region);
    EXPECT_TRUE(region_module.has_value()) << region_module.status().to_string();
    if (!region_module) continue;
    tune::RegionBindings bindings{tokens, 256, 5};
    auto cases = tune::build_region_cases(*region_module, bindings, 3, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    EXPECT_TRUE(cases.has_value()) << cases.status().to_string();
    if (!cases) continue;
    auto compiled = testing::compile_candidates(qgemv, gpu::nvrtc_arch(gpu));
    auto results = tune::admit_candidates(*region_module, bindings, *cases, qgemv, compiled, tune::AdmitOptions{});
    EXPECT_TRUE(results.has_value()) << results.status().to_string();
    if (!results) continue;
    std::printf("%s %s r%d (%.2f MB)\n", label.c_str(), function_name.c_str(), plan.unique_id, plan.summary.bytes / 1e6);
    for (const auto& r : *results) {
      ++checked.candidates;
      checked.validated += r.validated;
      std::printf("  %-72s %-9s err %.2e  median %8.2f us  %6.0f GB/s  %s\n", r.name.c_str(), r.validated ? "valid" : "REJECTED",
                  r.max_rel_error, r.median_us, r.measured ? plan.summary.bytes / (r.median_us * 1e-6) / 1e9 : 0.0, r.rejection.c_str());
      EXPECT_TRUE(r.validated) << label << " " << r.name << ": " << r.rejection;
    }
  }
  return checked;
}

ir::Module quantized(const std::string& config, const std::string& spec, ir::DType dtype) {
  ir::Module module = testing::build_config_module(config, dtype);
  auto options = frontend::weight_format_options(spec, false, /*gpu=*/true);
  EXPECT_TRUE(options.has_value()) << options.status().to_string();
  EXPECT_TRUE(frontend::apply_weight_formats(module, {}, *options, config).is_ok());
  return module;
}

TEST(QGemvAdmission, ModelRegionsInEveryFormatValidate) {
  AC_REQUIRE_GPU();
  for (const auto& [config, spec, dtype] :
       {std::tuple<std::string, std::string, ir::DType>{"qwen3-1.7b.json", "int4:g128", ir::DType::kF16},
        {"qwen3-1.7b.json", "int8", ir::DType::kF16},
        {"llama-3.2-1b.json", "int4:g128", ir::DType::kF16},
        {"llama-3.2-1b.json", "int4:g32:zp:bf16", ir::DType::kBF16},
        {"llama-3.2-1b.json", "int8:bf16", ir::DType::kBF16}}) {
    const ir::Module module = quantized(config, spec, dtype);
    const std::string label = config + " " + spec;
    const Checked decode = admit_qgemv(module, "decode", 1, *gpu, label);
    EXPECT_EQ(decode.regions, 4) << label;
    EXPECT_EQ(decode.validated, decode.candidates) << label;
    const Checked prefill = admit_qgemv(module, "prefill", 7, *gpu, label);
    EXPECT_GE(prefill.regions, 4) << label;
    EXPECT_EQ(prefill.validated, prefill.candidates) << label;
  }
}

// One linear y = x @ w^T (+ residual) over a grid of N and K.
TEST(QGemvAdmission, AGridOfShapesValidates) {
  AC_REQUIRE_GPU();
  for (const char* format : {"i8_f16", "i4g32_f16", "i4g64z_f16", "i4g128_bf16"})
    for (const auto& [N, K] : {std::pair<int, int>{8, 256}, {100, 512}, {1000, 1024}, {2048, 4096}, {64, 8192}, {3, 768}}) {
      const std::string w = std::string(format) + "[" + std::to_string(N) + ", " + std::to_string(K) + "]";
      const std::string n = std::to_string(N), k = std::to_string(K);
      const std::string text = "module m {\n  param @w : " + w + "\n  func @decode(%x: f16[1, " + k + "], %r: f16[1, " + n +
                               "]) -> (f16[1, " + n + "]) {\n    %w = weight {name = \"w\"} : " + w + "\n    %y = linear(%x, %w) : f16[1, " +
                               n + "]\n    %z = add(%y, %r) : f16[1, " + n + "]\n    return %z\n  }\n}\n";
      auto module = ir::parse_module(text, "grid");
      ASSERT_TRUE(module.has_value()) << module.status().to_string();
      const Checked checked = admit_qgemv(*module, "decode", 1, *gpu, std::string(format) + " N=" + n + " K=" + k);
      EXPECT_EQ(checked.regions, 1) << format << " " << N << "x" << K;
      EXPECT_GT(checked.candidates, 0);
    }
}

// The tensor-core kernel's candidates among a compile's 8 of each region, for every epilogue (bias,
// residual, gate/up, multi-segment rows) and the RMSNorm prologue, at 1 and T = 7 tokens (and a
// static 3), in int4 groups of 32, 64 and 128 with and without zero points and f16 or bf16 scales, in
// groups of 32 with offsets (GGUF Q4_1's values), and int8 per channel (f16 and bf16 scales) and in
// groups of 32 (GGUF Q8_0's values).
TEST(QGemvAdmission, TensorCoreEpiloguesAndPrologueValidate) {
  AC_REQUIRE_GPU();
  using testing::QGemvCase;
  for (const char* w : {"i4g32_f16", "i4g64z_f16", "i4g128_f16", "i4g128z_bf16", "i4g32m_f16", "i8_f16", "i8_bf16", "i8g32_f16"})
    for (const QGemvCase c : {QGemvCase::kBias, QGemvCase::kResidual, QGemvCase::kGateUp, QGemvCase::kMulti, QGemvCase::kNorm})
      for (const std::string rows : {"1", "3", "T"}) {
        if (c == QGemvCase::kNorm && rows != "1") continue;  // the prologue is matched for one token
        if (c != QGemvCase::kResidual && rows == "3") continue;
        const std::string text = testing::qgemv_case_module(c, w, 200, 1024, rows);
        auto module = ir::parse_module(text, "qgemv case");
        ASSERT_TRUE(module.has_value()) << module.status().to_string();
        const std::string label = std::string(w) + " " + testing::qgemv_case_name(c) + " rows " + rows;
        const Checked checked = admit_qgemv(*module, "decode", rows == "T" ? 7 : 1, *gpu, label, 8, is_mma);
        EXPECT_EQ(checked.regions, 1) << label;
        // A tensor-core candidate at least, and the cuBLAS fallback, which a static count of several
        // tokens does not have with quantized weights (its workspace is laid out per token of T).
        EXPECT_GE(checked.candidates, rows == "3" ? 1 : 2) << label;
        EXPECT_EQ(checked.validated, checked.candidates) << label;
      }
}

// GGUF Q8_0's and Q4_1's values as row formats (int8 with a scale per 32, int4 with a scale and an
// offset per 32; scalar kernel): every epilogue and the RMSNorm prologue, at 1 and T = 7 tokens, and a
// grid of N and K, against the interpreter.
TEST(QGemvAdmission, GgufRowFormatsValidate) {
  AC_REQUIRE_GPU();
  using testing::QGemvCase;
  for (const char* w : {"i8g32_f16", "i4g32m_f16"}) {
    for (const QGemvCase c : {QGemvCase::kBias, QGemvCase::kResidual, QGemvCase::kGateUp, QGemvCase::kMulti, QGemvCase::kNorm})
      for (const std::string rows : {"1", "T"}) {
        if (c == QGemvCase::kNorm && rows != "1") continue;  // the prologue is matched for one token
        auto module = ir::parse_module(testing::qgemv_case_module(c, w, 200, 1024, rows), "qgemv case");
        ASSERT_TRUE(module.has_value()) << module.status().to_string();
        const std::string label = std::string(w) + " " + testing::qgemv_case_name(c) + " rows " + rows;
        const Checked checked = admit_qgemv(*module, "decode", rows == "T" ? 7 : 1, *gpu, label, 8);
        EXPECT_EQ(checked.regions, 1) << label;
        EXPECT_GT(checked.candidates, 0) << label;
        EXPECT_EQ(checked.validated, checked.candidates) << label;
      }
    for (const auto& [N, K] : {std::pair<int, int>{8, 256}, {1000, 1024}, {3, 96}, {576, 1536}}) {
      auto module = ir::parse_module(testing::qgemv_case_module(QGemvCase::kResidual, w, N, K, "1"), "qgemv grid");
      ASSERT_TRUE(module.has_value()) << module.status().to_string();
      const std::string label = std::string(w) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
      const Checked checked = admit_qgemv(*module, "decode", 1, *gpu, label, 8);
      EXPECT_EQ(checked.regions, 1) << label;
      EXPECT_EQ(checked.validated, checked.candidates) << label;
    }
  }
}

// K that is not a multiple of the slab (128 int4 or 64 int8 elements: the last slab's lanes past K load
// nothing), and N that is not a multiple of the 8-row tile; every tensor-core candidate, with zero
// points, with offsets (whose chunk sums past K must be zero), and int8 per channel and in groups.
TEST(QGemvAdmission, TensorCoreOddShapesValidate) {
  AC_REQUIRE_GPU();
  using testing::QGemvCase;
  for (const char* w : {"i4g32z_f16", "i4g32m_f16", "i8_f16", "i8g32_f16"})
    for (const auto& [N, K] : {std::pair<int, int>{72, 800}, {3, 96}, {1000, 1056}, {13, 32}, {130, 4000}})
      for (const QGemvCase c : {QGemvCase::kResidual, QGemvCase::kGateUp}) {
        auto module = ir::parse_module(testing::qgemv_case_module(c, w, N, K, "1"), "qgemv odd shape");
        ASSERT_TRUE(module.has_value()) << module.status().to_string();
        const std::string label = std::string(w) + " " + testing::qgemv_case_name(c) + " N=" + std::to_string(N) + " K=" + std::to_string(K);
        const Checked checked = admit_qgemv(*module, "decode", 1, *gpu, label, 1000, is_mma);
        EXPECT_EQ(checked.regions, 1) << label;
        EXPECT_GT(checked.candidates, 0) << label;
        EXPECT_EQ(checked.validated, checked.candidates) << label;
      }
}

// Every tensor-core schedule (threads, 1 or 2 tiles, unroll, split) of a gate/up region of
// Qwen3-1.7B's width and of a residual region with Qwen3-1.7B's down_proj K, in int4 and int8.
TEST(QGemvAdmission, EveryTensorCoreScheduleValidates) {
  AC_REQUIRE_GPU();
  using testing::QGemvCase;
  for (const auto& [c, w, N, K] : {std::tuple<QGemvCase, const char*, int, int>{QGemvCase::kGateUp, "i4g128_f16", 6144, 2048},
                                   {QGemvCase::kResidual, "i4g64z_f16", 2048, 6144},
                                   {QGemvCase::kGateUp, "i8_f16", 6144, 2048},
                                   {QGemvCase::kResidual, "i8g32_f16", 2048, 6144}}) {
    auto module = ir::parse_module(testing::qgemv_case_module(c, w, N, K, "1"), "qgemv schedules");
    ASSERT_TRUE(module.has_value()) << module.status().to_string();
    const std::string label = std::string(w) + " " + testing::qgemv_case_name(c) + " every schedule";
    const Checked checked = admit_qgemv(*module, "decode", 1, *gpu, label, 1000, is_mma);
    EXPECT_EQ(checked.regions, 1) << label;
    EXPECT_GE(checked.candidates, 10) << label;
    EXPECT_EQ(checked.validated, checked.candidates) << label;
  }
}

}  // namespace
}  // namespace agentcompile
