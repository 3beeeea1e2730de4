// The quantized GEMV family on the CPU: a model compiled with --quantize plans every matmul region
// whose weights are quantized to qgemv (decode at one token, prefill at T block rows) and to the
// cuBLAS fallback, which dequantizes each linear's weights into the workspace before its GEMM (the f16
// GEMV and the GEMM read plain weights and stand aside); the logits' projection keeps its f16 families. Every planned
// candidate of one layer renders and compiles with NVRTC for sm_90a and sm_80, in every weight
// format (int8 and int4 groups; f16 and bf16 scales; with and without zero points). int4 groups with
// f16 activations also plan the tensor-core kernel (qgemv_mma.cuh) for every epilogue and prologue,
// and its candidates compile too.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "frontend/weight_formats.h"
#include "nvrtc_expect.h"
#include "ir/text.h"
#include "plan/families/qgemv.h"
#include "plan/planner.h"
#include "plan/sizes.h"
#include "qgemv_modules.h"

namespace agentcompile {
namespace {

ir::Module quantized_module(const std::string& config_name, const std::string& spec, ir::DType dtype = ir::DType::kF16) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + config_name);
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  config->dtype = dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  auto options = frontend::weight_format_options(spec, false, /*gpu=*/true);
  EXPECT_TRUE(options.has_value()) << options.status().to_string();
  EXPECT_TRUE(frontend::apply_weight_formats(*module, {}, *options, config_name).is_ok());
  return std::move(module).value();
}

std::vector<plan::RegionPlan> plan_matmuls(const ir::Module& module, const std::string& function_name, int64_t tokens) {
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, plan::summary_bindings(function_name, tokens));
  auto profile = plan::named_device_profile("h200");
  std::vector<plan::RegionPlan> out;
  for (auto& p : plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{}))
    if (std::count(p.summary.op_sequence.begin(), p.summary.op_sequence.end(), "linear") > 0) out.push_back(std::move(p));
  return out;
}

bool reads_quantized_weights(const plan::RegionPlan& p) {
  for (const auto& param : p.summary.params)
    if (ir::is_quantized(param.dtype)) return true;
  return false;
}

TEST(QGemvPlanning, QuantizedMatmulsPlanToQGemvWithAFallback) {
  const ir::Module module = quantized_module("qwen3-1.7b.json", "int4:g128");
  for (const auto& [function, tokens] : {std::pair<std::string, int64_t>{"decode", 1}, {"prefill", 128}}) {
    int quantized = 0, plain_matmuls = 0;
    for (const auto& p : plan_matmuls(module, function, tokens)) {
      std::set<std::string> families;
      for (const auto& c : p.candidates) families.insert(c.family);
      if (!reads_quantized_weights(p)) {
        plain_matmuls += families.count("cublas") > 0;  // the logits' projection: f16, with its own families
        EXPECT_FALSE(families.count("qgemv")) << function << " r" << p.unique_id;
        continue;
      }
      ++quantized;
      EXPECT_EQ(families, (std::set<std::string>{"qgemv", "cublas"})) << function << " r" << p.unique_id;
      int fallbacks = 0;
      for (const auto& c : p.candidates) {
        fallbacks += c.fallback;
        EXPECT_EQ(c.match.facts.at("w_format"), static_cast<int64_t>(ir::DType::kI4G128_F16)) << c.name();
        EXPECT_NE(c.name().find("i4g128_f16"), std::string::npos) << c.name();
        if (c.family == "cublas") {
          // Each linear's rows dequantized into the workspace's fixed part, which its GEMM reads.
          EXPECT_TRUE(c.fallback);
          int dequantized = 0;
          for (const auto& l : c.launches)
            if (l.library) EXPECT_EQ(l.library_args.at("b").rfind("workspace:", 0), 0u) << c.name();
            else dequantized += l.kernel.find("_dequant") != std::string::npos;
          EXPECT_GE(dequantized, 1) << c.name();
          EXPECT_GT(c.workspace_bytes_fixed, 0) << c.name();
          continue;
        }
        ASSERT_EQ(c.launches.size(), 1u);
        // One block row per token: 1 in decode, T in prefill.
        const plan::Extent y = c.launches[0].grid_y;
        EXPECT_EQ(y.at(tokens), tokens) << c.name();
      }
      EXPECT_EQ(fallbacks, 1) << function << " r" << p.unique_id;
    }
    // QKV, o_proj + residual, gate/up, down + residual (decode fuses the norms into QKV and gate/up).
    EXPECT_EQ(quantized, 4) << function;
    EXPECT_EQ(plain_matmuls, 1) << function;
  }
}

TEST(QGemvPlanning, TheViewNamesTheFormatOnlyForQuantizedWeights) {
  // f16 weights: the matmul views are as before (no w_format fact), so pinned f16 candidates keep their records.
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/llama-3.2-1b.json");
  ASSERT_TRUE(config.has_value());
  config->dtype = ir::DType::kF16;
  const ir::Module plain = frontend::build_module(*config).value();
  for (const auto& p : plan_matmuls(plain, "decode", 1))
    for (const auto& c : p.candidates) EXPECT_FALSE(c.match.facts.count("w_format")) << c.name();
}

// The top candidate and the fallback (cuBLAS's dequantize kernels) of every quantized region of a
// decode and a prefill layer.
std::vector<codegen::CompileJob> layer_jobs(const ir::Module& module) {
  std::vector<codegen::CompileJob> jobs;
  std::set<std::string> names;
  for (const auto& [function, tokens] : {std::pair<std::string, int64_t>{"decode", 1}, {"prefill", 64}}) {
    if (!module.find_function(function)) continue;  // a single-linear module has decode only
    for (const auto& p : plan_matmuls(module, function, tokens)) {
      if (!reads_quantized_weights(p)) continue;
      for (size_t i = 0; i < p.candidates.size(); ++i) {
        const plan::Candidate& c = p.candidates[i];
        if ((i != 0 && !c.fallback) || !names.insert(c.name()).second || !codegen::has_generated_launch(c)) continue;
        auto source = codegen::render_source(c);
        EXPECT_TRUE(source.has_value()) << c.name() << ": " << source.status().to_string();
        if (source) jobs.push_back({c.name(), *source});
      }
    }
  }
  return jobs;
}

bool is_mma(const plan::Candidate& c) { return c.params.count("mma") > 0; }

// int4 groups with f16 activations rank the tensor-core kernel first; int8 with f16 activations has
// both kernels in the capped space, ranked by the same heuristic; bf16 activations have the scalar one.
TEST(QGemvPlanning, Int4AndInt8WithF16ActivationsKeepTheTensorCoreKernel) {
  for (const auto& [spec, dtype, mma, first] : {std::tuple<std::string, ir::DType, bool, bool>{"int4:g128", ir::DType::kF16, true, true},
                                                {"int4:g32:zp", ir::DType::kF16, true, true},
                                                {"int4:g64:bf16", ir::DType::kF16, true, true},
                                                {"int8", ir::DType::kF16, true, false},
                                                {"int8", ir::DType::kBF16, false, false},
                                                {"int4:g64", ir::DType::kBF16, false, false}}) {
    const ir::Module module = quantized_module("qwen3-1.7b.json", spec, dtype);
    for (const auto& [function, tokens] : {std::pair<std::string, int64_t>{"decode", 1}, {"prefill", 64}})
      for (const auto& p : plan_matmuls(module, function, tokens)) {
        if (!reads_quantized_weights(p)) continue;
        std::set<std::string> forms;
        int scalar = 0;
        for (const auto& c : p.candidates) {
          if (c.family != "qgemv") continue;
          forms.insert(c.form);
          scalar += is_mma(c) ? 0 : 1;
          EXPECT_EQ(is_mma(c), c.name().rfind("qgemv_mma_", 0) == 0) << c.name();
          EXPECT_EQ(is_mma(c), c.form == "mma") << c.name();
          if (is_mma(c)) {
            EXPECT_EQ(c.params.at("rows") % 8, 0) << c.name();
          }
        }
        if (mma) {
          // Both kernels stay in the capped space.
          EXPECT_EQ(forms, (std::set<std::string>{"mma", "scalar"})) << spec << " " << function << " r" << p.unique_id;
          if (first) EXPECT_TRUE(is_mma(p.candidates.front())) << spec << " " << p.candidates.front().name();
          if (!first) EXPECT_GE(scalar, 2) << spec << " " << function << " r" << p.unique_id << ": the scalar schedules keep places";
        } else {
          EXPECT_EQ(forms, (std::set<std::string>{""})) << spec << " " << function << " r" << p.unique_id;
        }
      }
  }
}

// Every mma candidate of a module (planned with a wide cap), after checking that its one matmul
// region matched `variant` (and the norm prologue where asked).
std::vector<plan::Candidate> mma_candidates(const std::string& text, int64_t tokens, const std::string& variant, bool norm) {
  auto module = ir::parse_module(text, "qgemv case");
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << text;
  if (!module) return {};
  const ir::Function& function = *module->find_function("decode");
  auto partition = analysis::form_regions(*module, function);
  auto unique = analysis::unique_regions(*module, function, partition, {tokens, 256});
  plan::PlannerOptions wide;
  wide.max_candidates = 1000;
  std::vector<plan::Candidate> out;
  for (auto& p : plan::plan_function(*module, function, partition, unique, *plan::named_device_profile("h200"), wide))
    for (auto& c : p.candidates) {
      if (!is_mma(c)) continue;
      EXPECT_EQ(c.match.variant, variant) << c.name();
      EXPECT_EQ(c.name().find("rmsnorm_") != std::string::npos, norm) << c.name();
      out.push_back(c);
    }
  return out;
}

TEST(QGemvPlanning, TheTensorCoreKernelCoversEveryEpilogueAndTheNormPrologue) {
  using testing::QGemvCase;
  for (const QGemvCase c : {QGemvCase::kBias, QGemvCase::kResidual, QGemvCase::kGateUp, QGemvCase::kMulti, QGemvCase::kNorm})
    for (const std::string rows : {"1", "3", "T"}) {
      if (c == QGemvCase::kNorm && rows != "1") continue;  // the prologue is matched for one token
      const std::string variant = c == QGemvCase::kBias || c == QGemvCase::kNorm ? "plain" : c == QGemvCase::kMulti ? "multi" : testing::qgemv_case_name(c);
      const auto candidates = mma_candidates(testing::qgemv_case_module(c, "i4g64z_f16", 200, 1024, rows), rows == "T" ? 7 : 1, variant,
                                             c == QGemvCase::kNorm);
      EXPECT_GT(candidates.size(), 4u) << testing::qgemv_case_name(c) << " rows " << rows;
      // int8 per channel and in groups of 32 (GGUF Q8_0's values) take every epilogue too.
      for (const char* format : {"i8_f16", "i8g32_f16"})
        EXPECT_GT(mma_candidates(testing::qgemv_case_module(c, format, 200, 1024, rows), rows == "T" ? 7 : 1, variant, c == QGemvCase::kNorm).size(), 4u)
            << format << " " << testing::qgemv_case_name(c) << " rows " << rows;
    }
  // K not a multiple of the 128-element slab: one slab per step, no split.
  const auto odd_k = mma_candidates(testing::qgemv_case_module(QGemvCase::kResidual, "i4g32_f16", 64, 800, "1"), 1, "residual", false);
  ASSERT_FALSE(odd_k.empty());
  for (const auto& c : odd_k) EXPECT_EQ(c.params.at("unroll") * c.params.at("split"), 1) << c.name();
  // The GPU test's odd shapes and schedule grids (tests/gpu/qgemv_admission_test.cpp) have candidates to admit.
  for (const auto& [N, K] : {std::pair<int, int>{72, 800}, {3, 96}, {1000, 1056}, {13, 32}, {130, 4000}})
    for (const QGemvCase c : {QGemvCase::kResidual, QGemvCase::kGateUp})
      EXPECT_FALSE(mma_candidates(testing::qgemv_case_module(c, "i4g32z_f16", N, K, "1"), 1, testing::qgemv_case_name(c), false).empty())
          << N << "x" << K;
  EXPECT_GE(mma_candidates(testing::qgemv_case_module(QGemvCase::kGateUp, "i4g128_f16", 6144, 2048, "1"), 1, "gate_up", false).size(), 10u);
  EXPECT_GE(mma_candidates(testing::qgemv_case_module(QGemvCase::kResidual, "i4g64z_f16", 2048, 6144, "1"), 1, "residual", false).size(), 10u);
  // GGUF Q4_1's values (offsets) too.
  EXPECT_GT(mma_candidates(testing::qgemv_case_module(QGemvCase::kGateUp, "i4g32m_f16", 200, 1024, "1"), 1, "gate_up", false).size(), 4u);
}

TEST(QGemvNvrtc, TensorCoreCandidatesCompileForSm90aAndSm80) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  using testing::QGemvCase;
  std::vector<codegen::CompileJob> jobs;
  std::set<std::string> names;
  auto add = [&](const plan::Candidate& c) {
    if (!names.insert(c.name()).second) return;
    auto source = codegen::render_source(c);
    EXPECT_TRUE(source.has_value()) << c.name() << ": " << source.status().to_string();
    if (source) jobs.push_back({c.name(), *source});
  };
  // Every schedule of one region (tiles, unroll, split, threads), then the best of every epilogue and format.
  for (const auto& c : mma_candidates(testing::qgemv_case_module(QGemvCase::kGateUp, "i4g128_f16", 256, 2048, "1"), 1, "gate_up", false)) add(c);
  for (const auto& c : mma_candidates(testing::qgemv_case_module(QGemvCase::kGateUp, "i8_f16", 256, 2048, "1"), 1, "gate_up", false)) add(c);
  for (const QGemvCase c : {QGemvCase::kBias, QGemvCase::kResidual, QGemvCase::kMulti, QGemvCase::kNorm})
    for (const char* w : {"i4g32_f16", "i4g64z_bf16", "i4g128z_f16", "i4g32m_f16", "i8_f16", "i8_bf16", "i8g32_f16"}) {
      const std::string variant = c == QGemvCase::kBias || c == QGemvCase::kNorm ? "plain" : c == QGemvCase::kMulti ? "multi" : "residual";
      const auto candidates = mma_candidates(testing::qgemv_case_module(c, w, 200, 1024, "1"), 1, variant, c == QGemvCase::kNorm);
      if (!candidates.empty()) add(candidates.front());
    }
  ASSERT_GE(jobs.size(), 20u);
  testing::expect_nvrtc_compiles(jobs, "sm_90a");
  testing::expect_nvrtc_compiles(jobs, "sm_80");
}

TEST(QGemvNvrtc, EveryFormatCompilesForSm90aAndSm80) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  std::vector<codegen::CompileJob> jobs;
  for (const char* spec : {"int8", "int8:bf16", "int4:g32", "int4:g64:zp", "int4:g128", "int4:g128:zp:bf16"})
    for (auto& job : layer_jobs(quantized_module("qwen3-1.7b.json", spec))) jobs.push_back(std::move(job));
  // bf16 activations (the checkpoints' own dtype) with int4 groups.
  for (auto& job : layer_jobs(quantized_module("llama-3.2-1b.json", "int4:g64:bf16", ir::DType::kBF16))) jobs.push_back(std::move(job));
  // GGUF Q8_0's and Q4_1's values as row formats (a layer's linears in each).
  for (const char* w : {"i8g32_f16", "i4g32m_f16"})
    for (const testing::QGemvCase c : {testing::QGemvCase::kGateUp, testing::QGemvCase::kMulti, testing::QGemvCase::kNorm}) {
      auto module = ir::parse_module(testing::qgemv_case_module(c, w, 200, 1024, "1"), "gguf row format");
      ASSERT_TRUE(module.has_value()) << module.status().to_string();
      for (auto& job : layer_jobs(*module)) jobs.push_back(std::move(job));
    }
  ASSERT_GE(jobs.size(), 7u * 8u);
  testing::expect_nvrtc_compiles(jobs, "sm_90a");
  testing::expect_nvrtc_compiles(jobs, "sm_80");
}

}  // namespace
}  // namespace agentcompile
