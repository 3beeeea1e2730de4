// The engine end to end on a small random Qwen3 in f16: compiled on first use, then teacher-forced
// logits against the CPU reference interpreter, greedy generation against the reference, CUDA graph
// on and off token for token, seeded sampling reproducible, and the errors a user can provoke.
// The first test compiles, so it must run before anything initializes CUDA in this process.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "agentcompile/engine.h"
#include "agentcompile/first_use.h"
#include "frontend/init_random.h"
#include "frontend/model_builder.h"
#include "frontend/model_source.h"
#include "gpu_test_support.h"
#include "ir/interpreter.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "engine-test";

const fs::path& model_dir() {
  static const fs::path dir = [] {
    const fs::path out = kWork / "model";
    const Status written = testing::write_small_qwen3(out, 7);
    EXPECT_TRUE(written) << written.to_string();
    return out;
  }();
  return dir;
}

EngineOptions options(bool graph = true) {
  EngineOptions o;
  o.model = model_dir();
  o.cache_dir = kWork / "cache";
  o.max_context = 256;
  o.cuda_graph = graph;
  o.compile.max_candidates = 3;
  o.compile.repetitions = 5;
  return o;
}

std::unique_ptr<Engine>& engine() {
  static std::unique_ptr<Engine> e;
  return e;
}

std::vector<int32_t> random_ids(size_t n, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = pick(rng);
  return ids;
}

// Reference logits of every position, from the CPU interpreter in fp32.
std::vector<std::vector<float>> reference_logits(const std::vector<int32_t>& ids) {
  auto source = frontend::open_model(model_dir(), true);
  EXPECT_TRUE(source) << source.status().to_string();
  auto module = frontend::build_module(source->config, frontend::BuildOptions{true});
  EXPECT_TRUE(module) << module.status().to_string();
  const frontend::WeightStore* store = source->weights.get();
  ir::Interpreter interpreter(*module, [store](const std::string& n, std::vector<float>& out) { return store->read_f32(n, out); },
                              ir::InterpreterOptions{256, 0});
  auto out = interpreter.run("prefill", {ir::HostTensor::from_i32({static_cast<int64_t>(ids.size())}, ids), ir::HostTensor::scalar_i32(0)});
  EXPECT_TRUE(out) << out.status().to_string();
  const size_t V = static_cast<size_t>(source->config.vocab_size);
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < ids.size(); ++i) rows.emplace_back(out->front().f32.begin() + i * V, out->front().f32.begin() + (i + 1) * V);
  return rows;
}

size_t argmax(const float* row, size_t n) { return static_cast<size_t>(std::max_element(row, row + n) - row); }

TEST(Engine, CompilesOnFirstUseAndMatchesTheReference) {
  AC_REQUIRE_GPU();
  const auto say = [](const std::string& line) { std::fprintf(stderr, "  %s\n", line.c_str()); };
  // The runtime alone never compiles: with an empty cache it says so.
  auto uncompiled = Engine::load(options(), say);
  ASSERT_FALSE(uncompiled);
  EXPECT_EQ(uncompiled.status().code(), ErrorCode::kMismatch) << uncompiled.status().to_string();
  EXPECT_NE(uncompiled.status().message().find("compile it first"), std::string::npos) << uncompiled.status().to_string();
  // Compile on first use; the runtime then finds the model's own artifact in the cache.
  auto prepared = prepare_artifact(options(), say);
  ASSERT_TRUE(prepared) << prepared.status().to_string();
  EXPECT_TRUE(prepared->compiled_now) << prepared->note;
  EXPECT_TRUE(std::filesystem::exists(prepared->dir / "cubin" / "ac_sample.cubin")) << "the sampler ships in the artifact";
  auto loaded = Engine::load(options(), say);
  ASSERT_TRUE(loaded) << loaded.status().to_string();
  engine() = std::move(*loaded);
  const EngineInfo& info = engine()->info();
  EXPECT_EQ(info.artifact, prepared->dir.string());
  EXPECT_EQ(info.max_context, 256);

  const std::vector<int32_t> ids = random_ids(40, info.vocab_size, 3);
  auto logits = engine()->teacher_forced_logits(ids, 20);
  ASSERT_TRUE(logits) << logits.status().to_string();
  const auto reference = reference_logits(ids);
  const size_t V = static_cast<size_t>(info.vocab_size);
  double worst = 0;
  int agree = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* ours = logits->data() + i * V;
    double max_ref = 0, max_err = 0;
    for (size_t v = 0; v < V; ++v) {
      max_ref = std::max(max_ref, std::fabs(static_cast<double>(reference[i][v])));
      max_err = std::max(max_err, std::fabs(static_cast<double>(ours[v]) - reference[i][v]));
    }
    worst = std::max(worst, max_err / max_ref);
    agree += argmax(ours, V) == argmax(reference[i].data(), V);
  }
  std::fprintf(stderr, "teacher-forced logits: max relative error %.3g, top-1 agreement %d/%zu\n", worst, agree, ids.size());
  EXPECT_LE(worst, 2e-2);
  EXPECT_GE(agree, static_cast<int>(ids.size()) - 1);

  // Greedy generation follows the reference until (at most) a near tie.
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 16);
  GenerateOptions g;
  g.max_new_tokens = 24;
  g.stop_at_eos = false;
  auto generated = engine()->generate(prompt, g);
  ASSERT_TRUE(generated) << generated.status().to_string();
  ASSERT_EQ(generated->tokens.size(), 24u);
  std::vector<int32_t> sequence = prompt;
  for (size_t step = 0; step < generated->tokens.size(); ++step) {
    const auto rows = reference_logits(sequence);
    const std::vector<float>& last = rows.back();
    const size_t expected = argmax(last.data(), V);
    const int32_t got = generated->tokens[step];
    if (static_cast<size_t>(got) != expected) {
      double max_abs = 0;
      for (float x : last) max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
      EXPECT_LE(last[expected] - last[static_cast<size_t>(got)], 2e-2 * max_abs) << "step " << step << ": not a near tie";
      break;
    }
    sequence.push_back(got);
  }
}

TEST(Engine, GraphOnAndOffGiveTheSameTokens) {
  AC_REQUIRE_GPU();
  ASSERT_TRUE(engine()) << "the first test did not load the engine";
  auto again = prepare_artifact(options(false));
  ASSERT_TRUE(again) << again.status().to_string();
  EXPECT_FALSE(again->compiled_now) << again->note;
  auto no_graph = load_engine(options(false));
  ASSERT_TRUE(no_graph) << no_graph.status().to_string();
  const std::vector<int32_t> prompt = random_ids(21, engine()->info().vocab_size, 5);
  GenerateOptions g;
  g.max_new_tokens = 48;
  g.stop_at_eos = false;
  auto a = engine()->generate(prompt, g);
  auto b = (*no_graph)->generate(prompt, g);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->tokens, b->tokens);

  g.sampling = SamplingOptions{0.8f, 40, 0.9f, 1.1f, 1234};
  auto s1 = engine()->generate(prompt, g);
  auto s2 = engine()->generate(prompt, g);
  auto s3 = (*no_graph)->generate(prompt, g);
  ASSERT_TRUE(s1 && s2 && s3);
  EXPECT_EQ(s1->tokens, s2->tokens) << "the same seed must give the same tokens";
  EXPECT_EQ(s1->tokens, s3->tokens) << "graph on and off must sample alike";
  g.sampling.seed = 99;
  auto s4 = engine()->generate(prompt, g);
  ASSERT_TRUE(s4);
  EXPECT_NE(s1->tokens, s4->tokens) << "another seed should change a 48-token sample";
}

TEST(Engine, ErrorsNameTheProblem) {
  AC_REQUIRE_GPU();
  ASSERT_TRUE(engine());
  const int64_t V = engine()->info().vocab_size;
  GenerateOptions g;
  g.max_new_tokens = 4;
  auto too_long = engine()->generate(random_ids(300, V, 1), g);
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.status().message().find("longer than the context"), std::string::npos) << too_long.status().to_string();
  g.max_new_tokens = 200;
  auto past = engine()->generate(random_ids(100, V, 1), g);
  ASSERT_FALSE(past);
  EXPECT_NE(past.status().message().find("cache rows"), std::string::npos) << past.status().to_string();
  g.max_new_tokens = 4;
  std::vector<int32_t> bad = {1, 2, static_cast<int32_t>(V)};
  auto out_of_vocab = engine()->generate(bad, g);
  ASSERT_FALSE(out_of_vocab);
  EXPECT_NE(out_of_vocab.status().message().find("outside the vocabulary"), std::string::npos);

  EngineOptions huge = options();
  huge.max_context = int64_t{1} << 33;
  auto oom = Engine::load(huge);
  ASSERT_FALSE(oom);
  EXPECT_EQ(oom.status().code(), ErrorCode::kResourceExhausted) << oom.status().to_string();
  EXPECT_NE(oom.status().message().find("needs about"), std::string::npos) << oom.status().to_string();

  // After all that, the engine still generates.
  auto fine = engine()->generate(random_ids(10, V, 2), g);
  ASSERT_TRUE(fine) << fine.status().to_string();
  EXPECT_EQ(fine->tokens.size(), 4u);
}

}  // namespace
}  // namespace agentcompile
