// `agentcompile compile` without a GPU, as CI runs it: every region is planned and every candidate
// compiled by NVRTC and recorded as unvalidated; a second compile is warm; and the emitted
// CMakeLists.txt builds the selected kernels into a library with nvcc.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include "command_runner.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

int run(const std::string& command, std::string* output) {
  testing::CommandRun r = testing::run_command(command);
  output->append(r.output);
  return r.status;
}

TEST(Compile, NoGpuCompilesEveryCandidateAndTheArtifactBuilds) {
  const fs::path work = fs::path(AC_BINARY_DIR) / "compile-test";
  fs::remove_all(work);
  const std::string config = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/small-qwen3.json";
  const std::string compile = std::string(AC_CLI) + " compile " + config + " -o " + (work / "artifact").string() +
                              " --no-gpu --cache-dir " + (work / "cache").string();
  std::string output;
  ASSERT_EQ(run(compile, &output), 0) << output;
  EXPECT_NE(output.find("unvalidated"), std::string::npos) << output;

  std::ifstream in(work / "artifact" / "metadata.json");
  const nlohmann::json meta = nlohmann::json::parse(in);
  EXPECT_FALSE(meta["gpu_used"].get<bool>());
  ASSERT_FALSE(meta["regions"].empty());
  for (const auto& region : meta["regions"]) {
    EXPECT_FALSE(region["candidates"].empty()) << region["id"] << ": " << region["unplanned_reason"];
    for (const auto& candidate : region["candidates"]) {
      if (candidate["source_class"] == "library") continue;
      EXPECT_TRUE(candidate["compile"]["ok"].get<bool>()) << candidate["name"] << "\n" << candidate["compile"]["log"];
      EXPECT_EQ(candidate["validation"]["status"], "unvalidated");
    }
    for (const auto& selection : region["selection"]) EXPECT_FALSE(selection["candidate"].is_null()) << region["id"];
  }
  EXPECT_TRUE(fs::exists(work / "artifact" / "report.md"));
  EXPECT_TRUE(fs::exists(work / "artifact" / "include" / "agentcompile_kernels.h"));

  // Warm: the same compile reuses the artifact.
  std::string warm;
  ASSERT_EQ(run(compile, &warm), 0) << warm;
  EXPECT_NE(warm.find("warm"), std::string::npos) << warm;

  // The emitted CMake project builds with nvcc.
  std::string build;
  const std::string cmake = "cmake -S " + (work / "artifact").string() + " -B " + (work / "artifact-build").string() +
                            " -G Ninja -DCMAKE_CUDA_COMPILER=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc) && cmake --build " +
                            (work / "artifact-build").string();
  ASSERT_EQ(run(cmake, &build), 0) << build;
  EXPECT_TRUE(fs::exists(work / "artifact-build" / "libagentcompile_kernels.a")) << build;
}

}  // namespace
}  // namespace agentcompile

namespace agentcompile {
namespace {

// The real presets without a GPU, as CI compiles them: 16 unique regions (9 prefill, 7 decode: the
// decode RoPE opens the attention region) and 128 candidates, and NVRTC compiles every generated one.
TEST(Compile, PresetsWithoutGpuPlanAndCompileEveryCandidate) {
  for (const char* preset : {"qwen3-1.7b", "llama-3.2-1b"}) {
    const fs::path work = fs::path(AC_BINARY_DIR) / "compile-test-presets" / preset;
    fs::remove_all(work);
    fs::create_directories(work / "model");
    std::ifstream in(std::string(AC_SOURCE_DIR) + "/configs/" + preset + ".json");
    nlohmann::json config = nlohmann::json::parse(in);
    config["torch_dtype"] = "float16";  // as init-random --dtype f16 writes it
    std::ofstream(work / "model" / "config.json") << config.dump(2);
    std::string output;
    const std::string compile = std::string(AC_CLI) + " compile " + (work / "model").string() + " -o " + (work / "artifact").string() +
                                " --no-gpu --cache-dir " + (work / "cache").string();
    ASSERT_EQ(run(compile, &output), 0) << output;
    std::ifstream meta_in(work / "artifact" / "metadata.json");
    const nlohmann::json meta = nlohmann::json::parse(meta_in);
    size_t candidates = 0, generated = 0, compiled = 0;
    for (const auto& region : meta["regions"]) {
      EXPECT_FALSE(region["candidates"].empty()) << preset << " " << region["id"];
      for (const auto& candidate : region["candidates"]) {
        ++candidates;
        bool has_kernel = false;
        for (const auto& launch : candidate["launches"]) has_kernel |= !launch["library"].get<bool>();
        if (!has_kernel) continue;
        ++generated;
        compiled += candidate["compile"]["ok"].get<bool>();
        EXPECT_TRUE(candidate["compile"]["ok"].get<bool>()) << candidate["name"] << "\n" << candidate["compile"]["log"];
      }
    }
    // Decode is bucketed by context, up to the model's maximum (40960 for Qwen3-1.7B, 131072 for Llama-3.2-1B).
    const auto& buckets = meta["functions"]["decode"]["buckets"];
    ASSERT_EQ(buckets.size(), 4u) << preset;
    EXPECT_EQ(buckets[0]["name"], "decode");
    EXPECT_EQ(buckets[0]["max_context"], 512);
    EXPECT_EQ(buckets[0]["context_timed_at"], 256);
    EXPECT_EQ(buckets[1]["name"], "decode-c513-4096");
    EXPECT_EQ(buckets[2]["name"], "decode-c4097-16384");
    EXPECT_EQ(buckets[3]["min_context"], 16385);
    EXPECT_EQ(buckets[3]["max_context"], std::string(preset) == "qwen3-1.7b" ? 40960 : 131072);
    EXPECT_EQ(meta["regions"].size(), 16u) << preset;
    EXPECT_EQ(candidates, 128u) << preset;
    EXPECT_EQ(compiled, generated) << preset;
  }
}

// A GGUF file whose Q8_0 linears run as i8g32_f16 rows on the GPU path, and a quantized tiny llama: two
// regions of one shape (o_proj with its bias, down_proj without) compile to kernels of distinct names
// (they once shared one name with different sources, an internal error at emit).
TEST(Compile, GgufRowFormatsAndBiasedTwinsCompileForAGpuProfile) {
  const fs::path work = fs::path(AC_BINARY_DIR) / "compile-gguf-test";
  fs::remove_all(work);
  const std::string fixtures = std::string(AC_SOURCE_DIR) + "/tests/fixtures/gguf/";
  for (const auto& [model, flags] : {std::pair<std::string, std::string>{"tiny_llama_q8_0.gguf", ""}, {"tiny_llama.gguf", " --quantize int8"}}) {
    const std::string out = (work / model).string();
    std::string output;
    ASSERT_EQ(run(std::string(AC_CLI) + " compile " + fixtures + model + " -o " + out + " --device-profile h200 --cache-dir " +
                      (work / "cache").string() + flags,
                  &output),
              0)
        << output;
    std::ifstream in(fs::path(out) / "metadata.json");
    const std::string meta((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(meta.find(flags.empty() ? "i8g32_f16" : "i8_f16"), std::string::npos) << model;
    EXPECT_NE(meta.find("_bias_"), std::string::npos) << model;
  }
}

}  // namespace
}  // namespace agentcompile
