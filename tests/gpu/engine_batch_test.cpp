// Batched decode on the GPU (Engine::decode_rows, serve/engine_batch_backend.h), on a small random Qwen3
// in f16 compiled on first use with --batch-decode: sequences decoded together in one decode_batch call
// per step, their prompts read through it in chunks, each in its own KV slot and at its own position,
// give the greedy tokens each gets from Engine::generate alone; and through the scheduler the batched
// backend answers concurrent requests with those same tokens. One test, so the model is compiled once.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "agentcompile/first_use.h"
#include "frontend/init_random.h"
#include "frontend/model_builder.h"
#include "gpu_test_support.h"
#include "serve/engine_batch_backend.h"

namespace agentcompile::serve {
namespace {

namespace fs = std::filesystem;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "engine-batch-test";

TEST(EngineBatch, RowsOfManySequencesEqualEachAlone) {
  AC_REQUIRE_GPU();
  auto config = frontend::read_hf_config(fs::path(AC_SOURCE_DIR) / "tests/fixtures/configs/small-qwen3.json");
  ASSERT_TRUE(config) << config.status().to_string();
  ASSERT_TRUE(frontend::write_random_checkpoint(*config, ir::DType::kF16, 7, kWork / "model", uint64_t{1} << 30));
  EngineOptions options;
  options.model = kWork / "model";
  options.cache_dir = kWork / "cache";
  options.max_context = 256;
  options.batch_slots = 6;
  options.compile.batch_decode = true;
  options.compile.max_candidates = 3;
  options.compile.repetitions = 5;
  auto engine = load_engine(options, [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); });
  ASSERT_TRUE(engine) << engine.status().to_string();
  ASSERT_EQ((*engine)->info().batch_slots, 6);

  const int tokens = 12;
  std::vector<std::vector<int32_t>> prompts;
  for (int s = 0; s < 6; ++s) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 3 + 7 * s; ++i) prompt.push_back(static_cast<int32_t>((17 * s + 5 * i + 1) % 500));  // 3 .. 38 tokens
    prompts.push_back(prompt);
  }
  std::vector<std::vector<int32_t>> alone;
  for (const auto& prompt : prompts) {
    GenerateOptions g;
    g.max_new_tokens = tokens;
    g.stop_at_eos = false;
    auto result = (*engine)->generate(prompt, g);
    ASSERT_TRUE(result) << result.status().to_string();
    alone.push_back(result->tokens);
  }

  EngineBatchBackend backend(std::move(*engine));
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<std::vector<int32_t>> together(prompts.size());
  for (size_t s = 0; s < 4; ++s) ASSERT_TRUE(backend.add(s, SequenceStart{prompts[s], greedy, tokens}));
  for (int step = 0; step < 200 && backend.size() > 0; ++step) {
    if (step == 3)  // two more join while the first four are under way
      for (size_t s = 4; s < 6; ++s) ASSERT_TRUE(backend.add(s, SequenceStart{prompts[s], greedy, tokens}));
    auto outputs = backend.step();
    ASSERT_TRUE(outputs) << outputs.status().to_string();
    for (const StepOutput& output : *outputs) {
      ASSERT_TRUE(output.status) << output.status.to_string();
      together[output.id].push_back(output.token);
      if (static_cast<int>(together[output.id].size()) == tokens) backend.drop(output.id);
    }
  }
  // f16 kernels at other row counts may round a near tie the other way: the first tokens must agree, and
  // most of the rest (a greedy divergence changes everything after it).
  int equal = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    ASSERT_EQ(together[s].size(), static_cast<size_t>(tokens)) << "sequence " << s;
    EXPECT_EQ(together[s][0], alone[s][0]) << "sequence " << s;
    equal += together[s] == alone[s];
  }
  EXPECT_GE(equal, 5) << "of 6 sequences, batched greedy tokens equal those generated alone";
}

}  // namespace
}  // namespace agentcompile::serve
