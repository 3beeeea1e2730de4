// The server's GPU backend (serve/engine_backend.h) under the scheduler, on a small random Qwen3 in
// f16 compiled on first use: greedy text through the scheduler equals Engine::generate's own tokens,
// requests beyond the one the engine decodes wait and then run, a cancelled sequence frees the engine
// for the next one, and sampling the device lacks (penalties, log-probabilities) is refused. One test,
// so the model is compiled and loaded once.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "agentcompile/first_use.h"
#include "frontend/init_random.h"
#include "frontend/model_builder.h"
#include "gpu_test_support.h"
#include "serve/engine_backend.h"
#include "serve/scheduler.h"

namespace agentcompile::serve {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "serve-engine-test";

std::string collect(GenerationStream& stream, std::string* finish_reason = nullptr) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<GenerationEvent> events;
    stream.wait(events, 50ms);
    for (GenerationEvent& e : events) {
      text += e.piece.text;
      if (e.kind == GenerationEvent::Kind::kError) {
        ADD_FAILURE() << e.error.message;
        return text;
      }
      if (e.kind == GenerationEvent::Kind::kDone) {
        if (finish_reason) *finish_reason = e.finish_reason;
        return text;
      }
    }
  }
  ADD_FAILURE() << "no end within the limit";
  return text;
}

TEST(ServeEngine, TheSchedulerDrivesTheEngineOneSequenceAtATime) {
  AC_REQUIRE_GPU();
  ASSERT_TRUE(testing::write_small_qwen3(kWork / "model", 7));
  EngineOptions options;
  options.model = kWork / "model";
  options.cache_dir = kWork / "cache";
  options.max_context = 256;
  options.compile.max_candidates = 3;
  options.compile.repetitions = 5;
  auto engine = load_engine(options, [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); });
  ASSERT_TRUE(engine) << engine.status().to_string();

  // The expected tokens, from the engine itself, before the backend owns it.
  const std::vector<int32_t> prompt = {11, 200, 35, 700, 5, 9};
  GenerateOptions greedy;
  greedy.max_new_tokens = 12;
  greedy.stop_at_eos = false;
  auto direct = (*engine)->generate(prompt, greedy);
  ASSERT_TRUE(direct) << direct.status().to_string();

  auto tokenizer = tokenizer::Tokenizer::from_tokenizer_json(fs::path(AC_SOURCE_DIR) / "tests/fixtures/tokenizer/qwen3/tokenizer.json");
  ASSERT_TRUE(tokenizer) << tokenizer.status().to_string();
  EngineBackend backend(std::move(*engine));
  EXPECT_EQ(backend.info().max_sequences, 1);
  EXPECT_FALSE(backend.info().penalties);
  EXPECT_FALSE(backend.info().logprobs);
  Metrics metrics;
  Scheduler scheduler(backend, *tokenizer, {}, SchedulerOptions{1, 8}, metrics);

  GenerationJob job;
  job.prompt = prompt;
  job.sampling.temperature = 0;
  job.max_tokens = 12;
  auto submit = [&](const GenerationJob& j) {
    auto submitted = scheduler.submit(j);
    EXPECT_TRUE(std::holds_alternative<std::shared_ptr<GenerationStream>>(submitted));
    return std::get<std::shared_ptr<GenerationStream>>(submitted);
  };
  // Two at once: the second waits for the engine, then gives the same text.
  auto first = submit(job), second = submit(job);
  std::string finish;
  const std::string expected = tokenizer->decode(direct->tokens, true);
  EXPECT_EQ(collect(*first, &finish), expected);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(collect(*second), expected);

  // A long generation cancelled early frees the engine for the next request.
  GenerationJob long_job = job;
  long_job.max_tokens = 200;
  auto cancelled = submit(long_job);
  std::this_thread::sleep_for(50ms);
  cancelled->cancel();
  auto after = submit(job);
  EXPECT_EQ(collect(*after), expected);
  EXPECT_EQ(scheduler.load().running, 0u);

  // What the device sampler cannot do is refused (the server answers it with a 400 before this).
  SequenceStart penalized{prompt, {}, 4};
  penalized.sampling.presence_penalty = 1.f;
  EXPECT_EQ(backend.add(99, penalized).code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace agentcompile::serve
