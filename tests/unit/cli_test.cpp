// The agentcompile CLI end to end: inspect on the real presets (parameter counts, IR that parses back
// to the same module and verifies) and clear errors, not crashes, on bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/model_builder.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "command_runner.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

using CliRun = testing::CommandRun;
using testing::run_cli;

fs::path scratch(const std::string& name) {
  fs::path dir = fs::path(AC_BINARY_DIR) / "cli-test" / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Cli, InspectCountsParametersAndIrRoundTrips) {
  for (auto [config, count] : {std::pair{"qwen3-1.7b.json", "1,720,574,976"}, {"llama-3.2-1b.json", "1,235,814,400"}}) {
    const fs::path ir_file = scratch("inspect") / "module.ir";
    const std::string config_path = std::string(AC_SOURCE_DIR) + "/configs/" + config;
    CliRun run = run_cli("inspect " + config_path + " --no-ir --ir-out " + ir_file.string());
    ASSERT_EQ(run.status, 0) << run.output;
    EXPECT_NE(run.output.find(std::string("parameters: ") + count), std::string::npos) << run.output;

    std::ifstream in(ir_file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ir::parse_module(text.str(), ir_file.string());
    ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
    EXPECT_TRUE(ir::verify_module(*parsed).is_ok());
    auto built = frontend::build_module(*frontend::read_hf_config(config_path));
    ASSERT_TRUE(built.has_value());
    EXPECT_TRUE(*parsed == *built) << config << ": the printed IR does not parse back to the same module";
  }
}

TEST(Cli, UnknownModelTypeIsAClearError) {
  const fs::path dir = scratch("mamba");
  std::ofstream(dir / "config.json") << R"({"model_type": "mamba", "hidden_size": 64})";
  CliRun run = run_cli("inspect " + dir.string());
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("model_type 'mamba' is not supported"), std::string::npos) << run.output;
}

TEST(Cli, TruncatedCheckpointIsAClearError) {
  const fs::path dir = scratch("truncated");
  CliRun init = run_cli("init-random --config " + std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/tiny-qwen3.json --dtype f16 --seed 1 --out " + dir.string());
  ASSERT_EQ(init.status, 0) << init.output;
  fs::resize_file(dir / "model.safetensors", fs::file_size(dir / "model.safetensors") / 2);
  CliRun run = run_cli("reference " + dir.string() + " --tokens 1,2,3 -n 2");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("model.safetensors"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("Segmentation"), std::string::npos) << run.output;
}

TEST(Cli, PromptLongerThanTheContextIsAClearError) {
  const std::string model = std::string(AC_SOURCE_DIR) + "/tests/fixtures/models/tiny-llama";
  std::string tokens = "1";
  for (int i = 0; i < 300; ++i) tokens += ",5";
  CliRun run = run_cli("reference " + model + " --tokens " + tokens + " -n 4");
  EXPECT_NE(run.status, 0);
  EXPECT_NE(run.output.find("exceeds the model's context of 256"), std::string::npos) << run.output;
}

TEST(Cli, ReferenceGeneratesTheFixtureTokens) {
  const std::string model = std::string(AC_SOURCE_DIR) + "/tests/fixtures/models/tiny-qwen2";
  CliRun run = run_cli("reference " + model + " --tokens 1,17,300,42,7,511,256,99 -n 8");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("tokens: 357 357 357 244 9 429 362 357"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace agentcompile
