// Capture directories (docs/capture.md): a good one compiles and runs on the CPU reference through the
// CLI; a missing or corrupt file, a module that disagrees with its manifest, or weights that disagree
// with the module each end in an error that names the file and the cause.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "command_runner.h"
#include "frontend/model_source.h"
#include "frontend/safetensors.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

constexpr const char* kModule = R"(module cap {
  param @w : f32[8]
  func @forward(%x: f32[4, 8]) -> (f32[4, 8]) {
    %0 = weight {name = "w"} : f32[8]
    %1 = mul(%x, %0) : f32[4, 8] loc "model.py:3 in forward"
    %2 = exp(%1) : f32[4, 8]
    return %2
  }
}
)";

constexpr const char* kManifest = R"({"format": "agentcompile-capture/1", "kind": "module", "source": "model.py:Model",
 "functions": {"forward": {"inputs": [{"name": "x", "dtype": "f32", "shape": [4, 8]}],
                           "outputs": [{"name": "out", "dtype": "f32", "shape": [4, 8]}]}}})";

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

void write_f32(const fs::path& path, const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values) {
  ASSERT_TRUE(frontend::write_safetensors(path, {{name, ir::DType::kF32, shape, values.data()}}, {}).is_ok());
}

class CapturedModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ac_captured_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write(dir_ / "module.ir", kModule);
    write(dir_ / "capture.json", kManifest);
    w_ = {0.5f, -1.f, 0.25f, 2.f, 0.f, 1.f, -0.5f, 0.125f};
    write_f32(dir_ / "weights.safetensors", "w", {8}, w_);
    for (int i = 0; i < 32; ++i) x_.push_back(0.1f * static_cast<float>(i % 7) - 0.3f);
    write_f32(dir_ / "inputs.safetensors", "x", {4, 8}, x_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string open_error() {
    auto source = frontend::open_model(dir_, /*with_weights=*/true);
    return source ? std::string() : source.status().message();
  }

  fs::path dir_;
  std::vector<float> w_, x_;
};

TEST_F(CapturedModel, OpensAsACapturedModule) {
  auto source = frontend::open_model(dir_, /*with_weights=*/true);
  ASSERT_TRUE(source) << source.status().message();
  EXPECT_EQ(source->format, frontend::ModelFormat::kCaptured);
  EXPECT_FALSE(source->is_language_model());
  ASSERT_TRUE(source->captured.has_value());
  EXPECT_EQ(source->captured->functions.front().nodes[1].loc, "model.py:3 in forward");
}

TEST_F(CapturedModel, RunsOnTheReferenceAndChecksItsOutputs) {
  std::vector<float> expected;
  for (size_t i = 0; i < x_.size(); ++i) expected.push_back(std::exp(x_[i] * w_[i % 8]));
  write_f32(dir_ / "expected.safetensors", "out", {4, 8}, expected);
  auto run = run_cli("run-function " + dir_.string() + " --cpu --inputs " + (dir_ / "inputs.safetensors").string() + " --check " +
                     (dir_ / "expected.safetensors").string() + " --outputs " + (dir_ / "out.safetensors").string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("ok   out"), std::string::npos) << run.output;
  ASSERT_TRUE(fs::exists(dir_ / "out.safetensors"));

  // A wrong expectation fails the check with exit 1 and says where.
  expected[5] += 1.f;
  write_f32(dir_ / "expected.safetensors", "out", {4, 8}, expected);
  run = run_cli("run-function " + dir_.string() + " --cpu --inputs " + (dir_ / "inputs.safetensors").string() + " --check " +
                (dir_ / "expected.safetensors").string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("first at flat index 5"), std::string::npos) << run.output;
}

TEST_F(CapturedModel, InputsOfTheWrongShapeAreRefused) {
  write_f32(dir_ / "bad.safetensors", "x", {8, 4}, x_);
  auto run = run_cli("run-function " + dir_.string() + " --cpu --inputs " + (dir_ / "bad.safetensors").string());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("x is f32[8, 4], the function takes f32[4, 8]"), std::string::npos) << run.output;
}

TEST_F(CapturedModel, CompilesForANamedDeviceProfile) {
  auto run = run_cli("compile " + dir_.string() + " -o " + (dir_ / "artifact").string() + " --device-profile h200");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::exists(dir_ / "artifact" / "metadata.json")) << run.output;
}

// The same module with its batch dim as T, bound by the manifest to the size it was captured at.
void make_batch_symbolic(const fs::path& dir, const std::string& symbols) {
  std::string module = kModule, manifest = kManifest;
  for (size_t at; (at = module.find("f32[4, 8]")) != std::string::npos;) module.replace(at, 9, "f32[T, 8]");
  for (size_t at; (at = manifest.find("[4, 8]")) != std::string::npos;) manifest.replace(at, 6, "[\"T\", 8]");
  if (!symbols.empty()) manifest.replace(manifest.rfind("]}}}"), 4, "], \"symbols\": " + symbols + "}}}");
  write(dir / "module.ir", module);
  write(dir / "capture.json", manifest);
}

TEST_F(CapturedModel, BatchSymbolRunsAtTheCapturedSize) {
  make_batch_symbolic(dir_, R"({"T": 4})");
  std::vector<float> expected;
  for (size_t i = 0; i < x_.size(); ++i) expected.push_back(std::exp(x_[i] * w_[i % 8]));
  write_f32(dir_ / "expected.safetensors", "out", {4, 8}, expected);
  auto run = run_cli("run-function " + dir_.string() + " --cpu --inputs " + (dir_ / "inputs.safetensors").string() + " --check " +
                     (dir_ / "expected.safetensors").string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // Another batch size than the captured one is refused by name.
  write_f32(dir_ / "bad.safetensors", "x", {2, 8}, std::vector<float>(x_.begin(), x_.begin() + 16));
  run = run_cli("run-function " + dir_.string() + " --cpu --inputs " + (dir_ / "bad.safetensors").string());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("x is f32[2, 8], the function takes f32[4, 8]"), std::string::npos) << run.output;
}

TEST_F(CapturedModel, BatchSymbolCompilesOneBucketAtTheCapturedSize) {
  make_batch_symbolic(dir_, R"({"T": 4})");
  auto run = run_cli("compile " + dir_.string() + " -o " + (dir_ / "artifact").string() + " --device-profile h200");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(dir_ / "artifact" / "metadata.json");
  const std::string metadata((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(metadata.find(R"("max_tokens": 4,)"), std::string::npos) << metadata.substr(0, 2000);
}

TEST_F(CapturedModel, BatchSymbolNeedsASizeInTheManifest) {
  make_batch_symbolic(dir_, "");
  EXPECT_NE(open_error().find("capture.json gives no size for T (functions.forward.symbols)"), std::string::npos) << open_error();
  make_batch_symbolic(dir_, R"({"T": 0})");
  EXPECT_NE(open_error().find("functions.forward.symbols.T must be an integer from 1 to 2^31, not 0"), std::string::npos) << open_error();
  make_batch_symbolic(dir_, R"({"T": "4"})");
  EXPECT_NE(open_error().find("functions.forward.symbols.T must be an integer"), std::string::npos) << open_error();
  make_batch_symbolic(dir_, R"({"L": 4})");
  EXPECT_NE(open_error().find("names \"L\": only T can be bound"), std::string::npos) << open_error();
  make_batch_symbolic(dir_, R"([4])");
  EXPECT_NE(open_error().find("functions.forward.symbols must be an object"), std::string::npos) << open_error();
}

TEST_F(CapturedModel, MissingModuleIsNamed) {
  fs::remove(dir_ / "module.ir");
  EXPECT_NE(open_error().find("module.ir"), std::string::npos) << open_error();
}

TEST_F(CapturedModel, CorruptModuleNamesTheLine) {
  write(dir_ / "module.ir", std::string(kModule).replace(std::string(kModule).find("exp("), 4, "exq("));
  const std::string message = open_error();
  EXPECT_NE(message.find("module.ir:6:"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown op 'exq'"), std::string::npos) << message;
}

TEST_F(CapturedModel, ManifestOfAnotherFormatIsRefused) {
  write(dir_ / "capture.json", R"({"format": "something-else/2", "kind": "module", "functions": {"forward": {}}})");
  EXPECT_NE(open_error().find("capture.json: format is not"), std::string::npos) << open_error();
  write(dir_ / "capture.json", "{\"format\": \"agentcompile-capture/1\", \"kind\": ");
  EXPECT_NE(open_error().find("capture.json: is not a JSON object"), std::string::npos) << open_error();
  write(dir_ / "capture.json", R"(["not", "an", "object"])");
  EXPECT_NE(open_error().find("capture.json: is not a JSON object"), std::string::npos) << open_error();
}

TEST_F(CapturedModel, ManifestAndModuleMustAgree) {
  write(dir_ / "capture.json", std::string(kManifest).replace(std::string(kManifest).find("\"forward\""), 9, "\"backward\""));
  EXPECT_NE(open_error().find("has no function @backward, which capture.json lists"), std::string::npos) << open_error();
}

TEST_F(CapturedModel, MissingOrTruncatedWeightsAreNamed) {
  fs::remove(dir_ / "weights.safetensors");
  EXPECT_NE(open_error().find("missing tensor 'w'"), std::string::npos) << open_error();
  write_f32(dir_ / "weights.safetensors", "w", {8}, w_);
  fs::resize_file(dir_ / "weights.safetensors", fs::file_size(dir_ / "weights.safetensors") - 5);
  EXPECT_NE(open_error().find("weights.safetensors"), std::string::npos) << open_error();
  write_f32(dir_ / "weights.safetensors", "w", {4}, {1, 2, 3, 4});
  EXPECT_NE(open_error().find("tensor 'w' has shape [4]"), std::string::npos) << open_error();
}

TEST_F(CapturedModel, ALanguageModelCaptureNeedsPrefillAndDecode) {
  write(dir_ / "capture.json", std::string(kManifest).replace(std::string(kManifest).find("\"module\""), 8, "\"causal_lm\""));
  EXPECT_NE(open_error().find("a causal LM capture needs @prefill and @decode"), std::string::npos) << open_error();
}

}  // namespace
}  // namespace agentcompile
