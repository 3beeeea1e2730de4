// The scheduler over a scripted backend (tokens decided in advance, every add/drop recorded with the
// step it came before), and the CPU backend over the tiny Qwen3 fixture: admission at step
// boundaries up to max_running, the queue limit (429), a cancelled request's slot freed at the next
// boundary, the end of a sequence (EOS, stop string, max_tokens) with its usage, drain (503 for new
// requests, the running ones finish), abort (error events), a failing sequence that does not take
// the others with it, and per-sequence caches that make interleaved, chunked prompts generate exactly
// what each prompt generates alone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "frontend/model_source.h"
#include "ir/interpreter.h"
#include "serve/cpu_backend.h"
#include "serve/scheduler.h"

namespace agentcompile::serve {
namespace {

using namespace std::chrono_literals;

// Each sequence yields script[i] at its i-th step (then keeps repeating the last token); a prompt
// whose first id is kFailing fails at its second step.
class ScriptedBackend final : public Backend {
 public:
  static constexpr int32_t kFailing = 7;
  ScriptedBackend(int64_t max_sequences, std::vector<int32_t> script) : script_(std::move(script)) {
    info_.name = "scripted";
    info_.max_sequences = max_sequences;
    info_.max_context = 1 << 20;
    info_.vocab_size = 1 << 20;
  }
  const BackendInfo& info() const override { return info_; }
  Status add(SequenceId id, SequenceStart start) override {
    std::lock_guard lock(mutex_);
    if (static_cast<int64_t>(sequences_.size()) >= info_.max_sequences) return error(ErrorCode::kResourceExhausted, "full");
    sequences_[id] = Sequence{start.prompt.front() == kFailing, 0};
    adds_.push_back({id, steps_});
    return Status::ok();
  }
  Expected<std::vector<StepOutput>> step() override {
    std::this_thread::sleep_for(2ms);
    std::lock_guard lock(mutex_);
    ++steps_;
    std::vector<StepOutput> outputs;
    for (auto& [id, sequence] : sequences_) {
      StepOutput output;
      output.id = id;
      if (sequence.failing && sequence.position == 1) output.status = error(ErrorCode::kInternal, "scripted failure");
      output.token = script_[std::min(sequence.position++, script_.size() - 1)];
      outputs.push_back(output);
    }
    return outputs;
  }
  void drop(SequenceId id) override {
    std::lock_guard lock(mutex_);
    if (sequences_.erase(id)) drops_.push_back({id, steps_});
  }
  size_t size() const override { return sequences_.size(); }

  int64_t steps() {
    std::lock_guard lock(mutex_);
    return steps_;
  }
  std::vector<std::pair<SequenceId, int64_t>> drops() {
    std::lock_guard lock(mutex_);
    return drops_;
  }
  std::vector<std::pair<SequenceId, int64_t>> adds() {
    std::lock_guard lock(mutex_);
    return adds_;
  }

 private:
  struct Sequence {
    bool failing = false;
    size_t position = 0;
  };
  BackendInfo info_;
  std::vector<int32_t> script_;
  std::mutex mutex_;
  std::map<SequenceId, Sequence> sequences_;
  int64_t steps_ = 0;
  std::vector<std::pair<SequenceId, int64_t>> adds_, drops_;
};

struct Outcome {
  std::string text;
  std::string finish_reason;
  Usage usage;
  std::optional<ApiError> error;
};

Outcome collect(GenerationStream& stream, std::chrono::milliseconds limit = 10s) {
  Outcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<GenerationEvent> events;
    stream.wait(events, 50ms);
    for (GenerationEvent& e : events) {
      outcome.text += e.piece.text;
      if (e.kind == GenerationEvent::Kind::kDone) {
        outcome.finish_reason = e.finish_reason;
        outcome.usage = e.usage;
        return outcome;
      }
      if (e.kind == GenerationEvent::Kind::kError) {
        outcome.error = e.error;
        return outcome;
      }
    }
  }
  ADD_FAILURE() << "no end within the limit";
  return outcome;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = tokenizer::Tokenizer::from_tokenizer_json(std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3/tokenizer.json");
    ASSERT_TRUE(loaded) << loaded.status().to_string();
    text_.emplace(std::move(*loaded));
    words_ = text_->encode(" one two three four five six seven eight nine ten", false);
    eos_ = static_cast<int32_t>(text_->vocab_size()) - 1;
  }
  GenerationJob job(int64_t max_tokens, std::vector<std::string> stop = {}, int32_t first = 1) {
    GenerationJob j;
    j.prompt = {first, 2, 3};
    j.max_tokens = max_tokens;
    j.stop = std::move(stop);
    return j;
  }
  std::shared_ptr<GenerationStream> submit(Scheduler& scheduler, GenerationJob j) {
    auto submitted = scheduler.submit(std::move(j));
    if (auto* error = std::get_if<ApiError>(&submitted)) {
      ADD_FAILURE() << "refused: " << error->message;
      return nullptr;
    }
    return std::get<std::shared_ptr<GenerationStream>>(submitted);
  }
  std::optional<tokenizer::Tokenizer> text_;
  std::vector<int32_t> words_;
  int32_t eos_ = 0;
  Metrics metrics_;
};

TEST_F(SchedulerTest, SequencesEndAtMaxTokensEosOrAStopStringWithTheirUsage) {
  std::vector<int32_t> script(words_.begin(), words_.begin() + 4);
  script.push_back(eos_);
  ScriptedBackend backend(4, script);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{4, 8}, metrics_);
  auto by_length = submit(scheduler, job(2));
  auto by_eos = submit(scheduler, job(100));
  auto by_stop = submit(scheduler, job(100, {" thr"}));
  Outcome length = collect(*by_length), eos = collect(*by_eos), stop = collect(*by_stop);
  EXPECT_EQ(length.text, " one two");
  EXPECT_EQ(length.finish_reason, "length");
  EXPECT_EQ(length.usage.completion_tokens, 2);
  EXPECT_EQ(length.usage.prompt_tokens, 3);
  EXPECT_EQ(eos.text, " one two three four");
  EXPECT_EQ(eos.finish_reason, "stop");
  EXPECT_EQ(eos.usage.completion_tokens, 5) << "the end-of-sequence token counts as generated";
  EXPECT_EQ(stop.text, " one two");
  EXPECT_EQ(stop.finish_reason, "stop");
  EXPECT_EQ(stop.usage.completion_tokens, 3);
  EXPECT_EQ(backend.drops().size(), 3u) << "every finished sequence frees its slot";
}

TEST_F(SchedulerTest, IgnoreEosRunsToMaxTokens) {
  ScriptedBackend backend(1, {words_[0], eos_, words_[1]});
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{1, 8}, metrics_);
  GenerationJob j = job(4);
  j.ignore_eos = true;
  Outcome outcome = collect(*submit(scheduler, std::move(j)));
  EXPECT_EQ(outcome.finish_reason, "length");
  EXPECT_EQ(outcome.usage.completion_tokens, 4);
  EXPECT_EQ(outcome.text, text_->decode(std::vector<int32_t>{words_[0], eos_, words_[1], words_[1]}, true)) << "the text goes on past it";
}

TEST_F(SchedulerTest, AdmissionWaitsForAFreeSlotAtAStepBoundary) {
  ScriptedBackend backend(2, words_);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{2, 8}, metrics_);
  auto a = submit(scheduler, job(3)), b = submit(scheduler, job(6)), c = submit(scheduler, job(2));
  EXPECT_EQ(collect(*c).finish_reason, "length");
  collect(*a);
  collect(*b);
  const auto adds = backend.adds();
  const auto drops = backend.drops();
  ASSERT_EQ(adds.size(), 3u);
  ASSERT_FALSE(drops.empty());
  // The third sequence came in only once the first left, at the boundary after that step.
  EXPECT_EQ(adds[2].first, 3u);
  EXPECT_EQ(drops[0].first, 1u);
  EXPECT_EQ(adds[2].second, drops[0].second);
}

TEST_F(SchedulerTest, RequestsBeyondTheQueueLimitGet429) {
  ScriptedBackend backend(1, words_);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{1, 1}, metrics_);
  auto running = submit(scheduler, job(1000));
  auto waiting = submit(scheduler, job(1));
  auto refused = scheduler.submit(job(1));
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).status, 429);
  EXPECT_EQ(std::get<ApiError>(refused).type, "rate_limit_error");
  running->cancel();
  EXPECT_EQ(collect(*waiting).finish_reason, "length") << "the waiting one runs once the slot is free";
}

TEST_F(SchedulerTest, ACancelledSequenceIsDroppedAtTheNextStepBoundary) {
  ScriptedBackend backend(2, words_);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{2, 8}, metrics_);
  auto gone = submit(scheduler, job(100000));
  auto stays = submit(scheduler, job(100000));
  while (backend.steps() < 5) std::this_thread::sleep_for(1ms);
  const int64_t cancelled_at = backend.steps();
  gone->cancel();
  while (backend.drops().empty()) std::this_thread::sleep_for(1ms);
  const auto drops = backend.drops();
  EXPECT_EQ(drops[0].first, 1u);
  EXPECT_LE(drops[0].second - cancelled_at, 1) << "freed within one step";
  EXPECT_EQ(scheduler.load().running, 1u);
  stays->cancel();
}

TEST_F(SchedulerTest, DrainRefusesNewRequestsAndLetsRunningOnesFinish) {
  ScriptedBackend backend(1, words_);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{1, 8}, metrics_);
  auto running = submit(scheduler, job(20));
  auto queued = submit(scheduler, job(3));
  scheduler.drain();
  auto refused = scheduler.submit(job(1));
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).status, 503);
  EXPECT_EQ(collect(*running).finish_reason, "length");
  EXPECT_EQ(collect(*queued).finish_reason, "length") << "queued before the drain: still served";
}

TEST_F(SchedulerTest, AbortEndsEveryRequestWithAnError) {
  ScriptedBackend backend(1, words_);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{1, 8}, metrics_);
  auto running = submit(scheduler, job(100000));
  auto queued = submit(scheduler, job(100000));
  while (backend.steps() < 2) std::this_thread::sleep_for(1ms);
  scheduler.abort("going away");
  for (auto* stream : {running.get(), queued.get()}) {
    Outcome outcome = collect(*stream);
    ASSERT_TRUE(outcome.error);
    EXPECT_EQ(outcome.error->status, 503);
    EXPECT_EQ(outcome.error->message, "going away");
  }
  EXPECT_EQ(backend.size(), 0u);
}

TEST_F(SchedulerTest, AFailingSequenceEndsAloneWithA500) {
  ScriptedBackend backend(2, words_);
  Scheduler scheduler(backend, *text_, {eos_}, SchedulerOptions{2, 8}, metrics_);
  auto failing = submit(scheduler, job(10, {}, ScriptedBackend::kFailing));
  auto fine = submit(scheduler, job(5));
  Outcome failed = collect(*failing);
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->status, 500);
  EXPECT_NE(failed.error->message.find("scripted failure"), std::string::npos);
  EXPECT_EQ(collect(*fine).finish_reason, "length");
}

// The CPU backend on the tiny Qwen3 fixture (random weights, vocabulary 512).
class CpuBackendTest : public ::testing::Test {
 protected:
  const std::string model_ = std::string(AC_SOURCE_DIR) + "/tests/fixtures/models/tiny-qwen3";

  std::vector<int32_t> alone(const std::vector<int32_t>& prompt, int tokens) {
    auto source = frontend::open_model(model_, true);
    EXPECT_TRUE(source) << source.status().to_string();
    auto module = frontend::source_module(*source);
    const frontend::WeightStore* store = source->weights.get();
    ir::Interpreter interpreter(*module, [store](const std::string& n, std::vector<float>& out) { return store->read_f32(n, out); },
                                ir::InterpreterOptions{64, 1});
    auto generation = interpreter.generate_greedy(prompt, tokens);
    EXPECT_TRUE(generation) << generation.status().to_string();
    return generation->tokens;
  }
};

TEST_F(CpuBackendTest, InterleavedChunkedSequencesGenerateWhatEachGeneratesAlone) {
  CpuBackendOptions options;
  options.model = model_;
  options.max_context = 64;
  options.max_sequences = 3;
  options.prefill_chunk = 3;
  options.threads = 1;
  auto backend = CpuBackend::open(options);
  ASSERT_TRUE(backend) << backend.status().to_string();
  const std::vector<std::vector<int32_t>> prompts = {{5, 17, 300, 42, 8, 99, 100}, {1, 2}, {400, 3, 3, 3, 250}};
  const size_t tokens = 6;
  SamplingParams greedy;
  greedy.temperature = 0;
  std::vector<std::vector<int32_t>> generated(prompts.size());
  // The third arrives while the first two are under way, in the slot of none of them.
  ASSERT_TRUE((*backend)->add(0, SequenceStart{prompts[0], greedy, int64_t{tokens}}));
  ASSERT_TRUE((*backend)->add(1, SequenceStart{prompts[1], greedy, int64_t{tokens}}));
  for (int step = 0; step < 40 && (*backend)->size() > 0; ++step) {
    if (step == 2) {
      ASSERT_TRUE((*backend)->add(2, SequenceStart{prompts[2], greedy, int64_t{tokens}}));
    }
    auto outputs = (*backend)->step();
    ASSERT_TRUE(outputs) << outputs.status().to_string();
    for (const StepOutput& output : *outputs) {
      ASSERT_TRUE(output.status) << output.status.to_string();
      generated[output.id].push_back(output.token);
      if (generated[output.id].size() == tokens) (*backend)->drop(output.id);
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(generated[i], alone(prompts[i], static_cast<int>(tokens))) << "sequence " << i;
  // A freed slot serves a new sequence from scratch: the same prompt again gives the same tokens.
  ASSERT_TRUE((*backend)->add(7, SequenceStart{prompts[1], greedy, int64_t{tokens}}));
  std::vector<int32_t> again;
  while (again.size() < tokens) {
    auto outputs = (*backend)->step();
    ASSERT_TRUE(outputs);
    for (const StepOutput& output : *outputs) again.push_back(output.token);
  }
  EXPECT_EQ(again, generated[1]);
}

TEST_F(CpuBackendTest, LimitsAreErrors) {
  CpuBackendOptions options;
  options.model = model_;
  options.max_context = 16;
  options.max_sequences = 1;
  options.threads = 1;
  auto backend = CpuBackend::open(options);
  ASSERT_TRUE(backend) << backend.status().to_string();
  EXPECT_EQ((*backend)->add(1, SequenceStart{std::vector<int32_t>(10, 1), {}, 8}).code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ((*backend)->add(1, SequenceStart{{600}, {}, 1}).code(), ErrorCode::kInvalidArgument) << "id past the vocabulary";
  ASSERT_TRUE((*backend)->add(1, SequenceStart{{1, 2}, {}, 2}));
  EXPECT_EQ((*backend)->add(2, SequenceStart{{1, 2}, {}, 2}).code(), ErrorCode::kResourceExhausted) << "one slot";
  options.max_context = 100000;
  EXPECT_FALSE(CpuBackend::open(options)) << "past the model's context of 256";
}

}  // namespace
}  // namespace agentcompile::serve
