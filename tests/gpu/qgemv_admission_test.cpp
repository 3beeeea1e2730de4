// On the GPU: the quantized GEMV family and the cuBLAS fallback of quantized matmuls (weights
// dequantized into the workspace, then the GEMM) against the reference interpreter's dequantization,
// over a grid of shapes and seeds. Every planned qgemv and cublas candidate of the quantized matmul
// regions of Qwen3-1.7B
// and Llama-3.2-1B (decode at one token with the norm prologues and every epilogue; prefill at T = 7
// block rows) in int8 and int4 formats, and of single linears of assorted N and K, is compiled,
// validated on 3 seeds x 2 input distributions (tune::admit_candidates: the interpreter dequantizes
// the same packed bytes the kernel reads) and timed; each must validate.
#include <cstdio>

#include "frontend/weight_formats.h"
#include "gpu_test_support.h"
#include "ir/text.h"

namespace agentcompile {
namespace {

struct Checked {
  int regions = 0, candidates = 0, validated = 0;
};

// Plans `function` of `module` (max 16 candidates a region), and admits the qgemv and cuBLAS candidates
// of every region that has qgemv candidates at T = `tokens`.
Checked admit_qgemv(const ir::Module& module, const std::string& function_name, int64_t tokens, const gpu::DeviceInfo& gpu,
                    const std::string& label) {
  Checked checked;
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {tokens, 256});
  auto profile = plan::named_device_profile("h200");
  plan::PlannerOptions wide;
  wide.max_candidates = 16;
  for (auto& plan : plan::plan_function(module, function, partition, unique, *profile, wide)) {
    std::vector<plan::Candidate> qgemv;
    for (const auto& c : plan.candidates)
      if (c.family == "qgemv") qgemv.push_back(c);
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

}  // namespace
}  // namespace agentcompile
