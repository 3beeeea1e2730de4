// `compile --quantize` end to end without a GPU: the artifact's module declares the quantized
// formats, every quantized matmul region is planned to the quantized GEMV family and to the cuBLAS
// fallback that dequantizes the weights first (what a no-GPU compile selects), metadata.json "weights" and report.md give the round-to-nearest
// error of every quantized matrix and the weight bytes a decode step reads; `inspect` reports the
// bytes per token of each format; bad --quantize values end in clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "command_runner.h"
#include "frontend/model_source.h"
#include "frontend/safetensors.h"
#include "scratch_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kTinyQwen3 = std::string(AC_SOURCE_DIR) + "/tests/fixtures/models/tiny-qwen3";

// tiny-qwen3 in f16 (the fixture is f32, which the GEMV families do not take): its config with
// torch_dtype float16 and its tensors rounded to f16, written once per process.
const std::string& tiny_qwen3_f16() {
  static const std::string dir = [] {
    const fs::path out = testing::scratch_dir("quantize-compile", "tiny-qwen3-f16");
    auto source = frontend::open_model(kTinyQwen3, /*with_weights=*/true);
    EXPECT_TRUE(source.has_value()) << source.status().to_string();
    std::vector<std::vector<uint16_t>> halves;
    std::vector<frontend::TensorToWrite> tensors;
    for (const frontend::TensorInfo& t : source->weights->tensors()) {
      std::vector<float> values;
      EXPECT_TRUE(source->weights->read_f32(t.name, values).is_ok());
      auto& h = halves.emplace_back(values.size());
      for (size_t i = 0; i < values.size(); ++i) h[i] = ir::float_to_half(values[i]);
    }
    size_t i = 0;
    for (const frontend::TensorInfo& t : source->weights->tensors()) tensors.push_back({t.name, ir::DType::kF16, t.shape, halves[i++].data()});
    EXPECT_TRUE(frontend::write_safetensors(out / "model.safetensors", tensors, {{"format", "pt"}}).is_ok());
    json config = json::parse(testing::file_bytes(fs::path(kTinyQwen3) / "config.json"));
    config["torch_dtype"] = "float16";
    std::ofstream(out / "config.json") << config.dump(2);
    return out.string();
  }();
  return dir;
}

#define EXPECT_CONTAINS(text, fragment)                                              \
  do {                                                                               \
    const std::string text_ = (text);                                                \
    EXPECT_NE(text_.find(fragment), std::string::npos) << "in: " << text_;           \
  } while (0)

// One no-GPU compile shared by the tests of this process.
const fs::path& artifact_dir() {
  static const fs::path dir = [] {
    const fs::path work = testing::scratch_dir("quantize-compile", "int4-g32");
    const testing::CommandRun run = testing::run_cli("compile --no-gpu --device-profile h200 --max-candidates 2 --quantize int4:g32 " +
                                                     tiny_qwen3_f16() + " -o " + (work / "artifact").string() + " --cache-dir " +
                                                     (work / "cache").string());
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_CONTAINS(run.output, "weights: quantizing 14 matrices to int4:g32");
    return work / "artifact";
  }();
  return dir;
}

json metadata() { return json::parse(testing::file_bytes(artifact_dir() / "metadata.json")); }

TEST(QuantizeCompile, TheModuleDeclaresTheFormatAndQGemvOrCublasRunsTheMatmuls) {
  const std::string ir = testing::file_bytes(artifact_dir() / "ir" / "module.ir");
  EXPECT_CONTAINS(ir, "param @model.layers.0.mlp.down_proj.weight : i4g32_f16[64, 96]");
  EXPECT_CONTAINS(ir, "param @lm_head.weight : f16[512, 64]");  // the logits keep their precision
  const json meta = metadata();
  int qgemv_regions = 0;
  for (const auto& region : meta["regions"]) {
    bool quantized = false;
    for (const auto& c : region["candidates"]) quantized |= c["facts"].contains("w_format");
    if (!quantized) continue;
    ++qgemv_regions;
    std::set<std::string> families;
    for (const auto& c : region["candidates"]) families.insert(c["family"].get<std::string>());
    EXPECT_EQ(families, (std::set<std::string>{"qgemv", "cublas"})) << region["id"];
  }
  EXPECT_GE(qgemv_regions, 8);  // decode and prefill: QKV, o_proj, gate/up, down
}

TEST(QuantizeCompile, MetadataAndReportGiveTheErrorOfEveryQuantizedMatrix) {
  const json weights = metadata()["weights"];
  ASSERT_TRUE(weights.is_object()) << metadata().dump(1).substr(0, 2000);
  EXPECT_EQ(weights["quantize"], "int4:g32");
  ASSERT_EQ(weights["tensors"].size(), 14u);  // 7 matrices in each of 2 layers
  for (const auto& t : weights["tensors"]) {
    EXPECT_EQ(t["format"], "i4g32_f16") << t;
    EXPECT_GT(t["rel_rms"].get<double>(), 0.0) << t;
    EXPECT_LT(t["rel_rms"].get<double>(), 0.2) << t;  // int4 of Gaussian-like weights: about 0.1
    EXPECT_GT(t["max_abs"].get<double>(), 0.0) << t;
  }
  EXPECT_GT(weights["decode_bytes_per_token"].get<double>(), weights["quantized_bytes_per_token"].get<double>());
  const std::string report = testing::file_bytes(artifact_dir() / "report.md");
  EXPECT_CONTAINS(report, "## Weights");
  EXPECT_CONTAINS(report, "`--quantize int4:g32`");
  EXPECT_CONTAINS(report, "| tensor | type | bytes | rel. RMS error | max abs error |");
  EXPECT_CONTAINS(report, "(2 more in metadata.json \"weights\")");
}

TEST(QuantizeCompile, BadValuesEndInClearErrors) {
  const fs::path work = testing::scratch_dir("quantize-compile", "errors");
  auto run = testing::run_cli("compile --no-gpu --device-profile h200 --quantize int4:g64 " + kTinyQwen3 + " -o " + (work / "a").string() +
                              " --cache-dir " + (work / "cache").string());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_CONTAINS(run.output, "rows of 96 elements are not a whole number of 64-element groups (choose a group size that divides 96)");
  run = testing::run_cli("compile --no-gpu --device-profile h200 --quantize int3 " + kTinyQwen3 + " -o " + (work / "b").string() +
                         " --cache-dir " + (work / "cache").string());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_CONTAINS(run.output, "--quantize 'int3': the format must be int8 or int4");
  run = testing::run_cli("compile --no-gpu --device-profile h200 --quantize int8 " + std::string(AC_SOURCE_DIR) +
                         "/tests/fixtures/gguf/tiny_llama_q8_0.gguf -o " + (work / "c").string() + " --cache-dir " + (work / "cache").string());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_CONTAINS(run.output, "this GGUF file is already quantized (q8_0)");
}

// --quantize-head on a tied head (tiny-qwen2, f16): the module holds an int8 copy of the table that the
// logits' projection reads, the embedding keeps the f16 table, and the head's regions (decode's GEMV
// with the final norm, prefill's) are planned to the quantized GEMV family and the cuBLAS fallback.
TEST(QuantizeCompile, ATiedHeadIsQuantizedAsACopyOfItsOwn) {
  const fs::path work = testing::scratch_dir("quantize-compile", "head-int8");
  const auto run = testing::run_cli("compile --no-gpu --device-profile h200 --max-candidates 2 --quantize-head int8 " + std::string(AC_SOURCE_DIR) +
                                    "/tests/fixtures/models/tiny-qwen2 -o " + (work / "artifact").string() + " --cache-dir " +
                                    (work / "cache").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "weights: quantizing 1 matrices to the LM head to int8 for their error");
  const std::string ir = testing::file_bytes(work / "artifact" / "ir" / "module.ir");
  EXPECT_CONTAINS(ir, "param @lm_head.weight : i8_f16[512, 64] values @model.embed_tokens.weight");
  EXPECT_CONTAINS(ir, "param @model.embed_tokens.weight : f16[512, 64]");
  const json meta = json::parse(testing::file_bytes(work / "artifact" / "metadata.json"));
  EXPECT_EQ(meta["weights"]["quantize_head"], "int8");
  ASSERT_EQ(meta["weights"]["tensors"].size(), 1u);
  EXPECT_EQ(meta["weights"]["tensors"][0]["name"], "lm_head.weight");
  EXPECT_LT(meta["weights"]["tensors"][0]["rel_rms"].get<double>(), 0.02);
  int head_regions = 0;
  for (const auto& region : meta["regions"]) {
    bool quantized = false;
    for (const auto& c : region["candidates"]) quantized |= c["facts"].contains("w_format");
    if (!quantized) continue;
    ++head_regions;
    std::set<std::string> families;
    for (const auto& c : region["candidates"]) families.insert(c["family"].get<std::string>());
    EXPECT_EQ(families, (std::set<std::string>{"qgemv", "cublas"})) << region["id"];
  }
  EXPECT_EQ(head_regions, 2);  // decode's and prefill's logits
  EXPECT_CONTAINS(testing::file_bytes(work / "artifact" / "report.md"), "the logits' projection `--quantize-head int8`");
}

TEST(QuantizeInspect, BytesPerDecodeTokenOfEachFormat) {
  const auto run = testing::run_cli("inspect --no-ir " + std::string(AC_SOURCE_DIR) + "/configs/qwen3-1.7b.json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_CONTAINS(run.output, "weight bytes read per decode token (decode floor = bytes / copy bandwidth):");
  for (const char* line : {"as stored", "--quantize int8", "--quantize int4:g128", "--quantize int4:g64", "--quantize int4:g32"})
    EXPECT_CONTAINS(run.output, line);
  // int4 g128 reads a bit over a quarter of the f16 matrices' bytes (scales: 1/64 more), plus the f16 lm_head.
  const auto quantized = testing::run_cli("inspect --no-ir --quantize int4 " + std::string(AC_SOURCE_DIR) + "/configs/qwen3-1.7b.json");
  ASSERT_EQ(quantized.exit_code, 0) << quantized.output;
  EXPECT_CONTAINS(quantized.output, "--quantize int4:g128");
  EXPECT_CONTAINS(quantized.output, "(196 quantized matrices");
  // Qwen3-1.7B ties its head: an int8 copy of the 151936 x 2048 table (plus a scale per row) replaces
  // the f16 one that decode read, the table's one gathered row aside.
  EXPECT_CONTAINS(run.output, "--quantize int4:g128 --quantize-head int8       1040.51 MB  (197 quantized matrices");
}

}  // namespace
}  // namespace agentcompile
