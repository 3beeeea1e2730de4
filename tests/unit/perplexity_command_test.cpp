// `agentcompile perplexity`: the number it prints is exp(mean NLL) of the text's tokens, each window
// run from position 0 behind BOS (recomputed here from the interpreter's logits), quantized weights
// move it, and bad input ends in a message that names the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>

#include "command_runner.h"
#include "frontend/model_source.h"
#include "frontend/weight_formats.h"
#include "ir/interpreter.h"
#include "scratch_files.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile {
namespace {

const std::string kText = std::string(AC_SOURCE_DIR) + "/bench/texts/public-domain.txt";

// A two-layer Qwen3 with random weights and the real Qwen3 vocabulary and tokenizer (its fixture),
// written once for the suite by init-random.
const std::string& model_dir() {
  static const std::string dir = [] {
    const std::filesystem::path scratch = testing::scratch_dir("PerplexityCommand", "model");
    std::ifstream in(std::string(AC_SOURCE_DIR) + "/tests/fixtures/models/tiny-qwen3/config.json");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    config = std::regex_replace(config, std::regex("\"vocab_size\": 512"), "\"vocab_size\": 151936");
    config = std::regex_replace(config, std::regex("\"tie_word_embeddings\": false"), "\"tie_word_embeddings\": true");
    std::ofstream(scratch / "config.json") << config;
    const auto made = testing::run_cli("init-random --config " + (scratch / "config.json").string() + " --dtype f16 --seed 3 --out " +
                                       (scratch / "model").string());
    EXPECT_EQ(made.exit_code, 0) << made.output;
    for (const char* file : {"tokenizer.json", "tokenizer_config.json"})
      std::filesystem::copy_file(std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3/" + file, scratch / "model" / file,
                                 std::filesystem::copy_options::overwrite_existing);
    return (scratch / "model").string();
  }();
  return dir;
}

double json_number(const std::string& output, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("\"" + key + "\": ([-0-9.eE+]+)"))) return NAN;
  return std::stod(m[1]);
}

// The perplexity of the text's first `tokens` tokens in windows of `window`, from the interpreter.
double expected_perplexity(int64_t window, size_t tokens) {
  auto source = frontend::open_model(model_dir(), true);
  EXPECT_TRUE(source) << source.status().to_string();
  frontend::BuildOptions build;
  build.prefill_all_logits = true;
  auto module = frontend::source_module(*source, build);
  EXPECT_TRUE(module) << module.status().to_string();
  auto tokenizer = tokenizer::Tokenizer::from_model_path(model_dir());
  EXPECT_TRUE(tokenizer) << tokenizer.status().to_string();
  std::ifstream in(kText);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<int32_t> ids = tokenizer->encode(text, false);
  ids.resize(tokens);
  const auto loaders = frontend::interpreter_loaders(*source->weights);
  ir::Interpreter interpreter(*module, loaders.values, loaders.packed, ir::InterpreterOptions{window, 2});
  double nll = 0;
  int64_t scored = 0;
  const size_t per_window = static_cast<size_t>(window) - (tokenizer->bos_id() ? 1 : 0);
  for (size_t at = 0; at < ids.size(); at += per_window) {
    std::vector<int32_t> w;
    if (tokenizer->bos_id()) w.push_back(*tokenizer->bos_id());
    for (size_t i = at; i < std::min(ids.size(), at + per_window); ++i) w.push_back(ids[i]);
    const int64_t n = static_cast<int64_t>(w.size());
    auto out = interpreter.run("prefill", {ir::HostTensor::from_i32({n}, w), ir::HostTensor::scalar_i32(0)});
    EXPECT_TRUE(out) << out.status().to_string();
    const int64_t vocab = out->front().shape[1];
    for (int64_t i = 0; i + 1 < n; ++i) {
      const float* row = out->front().f32.data() + i * vocab;
      double total = 0;
      for (int64_t v = 0; v < vocab; ++v) total += std::exp(static_cast<double>(row[v]));
      nll += std::log(total) - row[w[static_cast<size_t>(i + 1)]];
      ++scored;
    }
  }
  return std::exp(nll / static_cast<double>(scored));
}

TEST(PerplexityCommand, PrintsExpOfTheMeanNllOverItsWindows) {
  const auto run = testing::run_cli("perplexity " + model_dir() + " --text " + kText + " --window 24 --max-tokens 70 --threads 2 --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(json_number(run.output, "windows"), 3);  // 70 tokens, 24 per window (Qwen3 has no BOS)
  const double printed = json_number(run.output, "perplexity");
  EXPECT_NEAR(printed, expected_perplexity(24, 70), 1e-4 * printed);
  EXPECT_NEAR(std::log(printed), json_number(run.output, "mean_nll"), 1e-5);

  const auto int8 = testing::run_cli("perplexity " + model_dir() + " --text " + kText + " --window 24 --max-tokens 70 --threads 2 --json --quantize int8");
  ASSERT_EQ(int8.exit_code, 0) << int8.output;
  EXPECT_NE(int8.output.find("\"weights\": \"int8\""), std::string::npos) << int8.output;
  const double quantized = json_number(int8.output, "perplexity");
  EXPECT_NE(quantized, printed) << "int8 weights gave the f16 perplexity exactly: were they quantized?";
  EXPECT_NEAR(quantized / printed, 1.0, 0.1);
}

TEST(PerplexityCommand, BadInputIsNamed) {
  auto run = testing::run_cli("perplexity " + model_dir() + " --text /nonexistent/text.txt");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("/nonexistent/text.txt: cannot read the text file"), std::string::npos) << run.output;
  run = testing::run_cli("perplexity " + model_dir() + " --text " + kText + " --window 1");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("--window"), std::string::npos) << run.output;
  run = testing::run_cli("perplexity " + model_dir() + " --text " + kText + " --window 100000");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("exceeds the model's context"), std::string::npos) << run.output;
  const auto empty = testing::scratch_dir("PerplexityCommand", "empty") / "empty.txt";
  std::ofstream(empty).close();
  run = testing::run_cli("perplexity " + model_dir() + " --text " + empty.string());
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("the text file is empty"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace agentcompile
