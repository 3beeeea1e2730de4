// On the GPU: the tensor-parallel engine path on a small random Qwen3 in f16. TP=1 (the rank module of
// one rank: o_proj and down end in an all_reduce region, the LM head in an all_gather, both NCCL calls
// over a one-rank communicator) against the plain engine: teacher-forced logits within f16 rounding
// of each other and the same greedy tokens. Where the machine has two GPUs, also TP=2 (one engine per
// GPU, each on a thread, its rank's weights only) against TP=1: the same greedy tokens.
// The artifacts are compiled first, before anything initializes CUDA in this process.
#include <cstdio>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "agentcompile/engine.h"
#include "agentcompile/first_use.h"
#include "frontend/init_random.h"
#include "frontend/model_builder.h"
#include "gpu/driver_api.h"
#include "gpu_test_support.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "tensor-parallel-test";
const std::vector<int32_t> kPrompt = {11, 402, 7, 999, 63, 5, 812, 300};  // small-qwen3: a vocabulary of 1024
constexpr int kNewTokens = 24;

const fs::path& model_dir() {
  static const fs::path dir = [] {
    const fs::path out = kWork / "model";
    const Status written = testing::write_small_qwen3(out, 11);
    EXPECT_TRUE(written) << written.to_string();
    return out;
  }();
  return dir;
}

EngineOptions options(int ranks, int rank) {
  EngineOptions o;
  o.model = model_dir();
  o.cache_dir = kWork / "cache";
  o.max_context = 256;
  o.compile.max_candidates = 3;
  o.compile.repetitions = 5;
  o.compile.tensor_parallel = ranks;
  o.compile.rank = rank;
  o.device = ranks > 1 ? rank : 0;
  return o;
}

// Every artifact the tests run, compiled on first use before CUDA is initialized here.
const std::map<std::pair<int, int>, fs::path>& artifacts() {
  static const std::map<std::pair<int, int>, fs::path> dirs = [] {
    std::map<std::pair<int, int>, fs::path> out;
    for (auto [ranks, rank] : {std::pair{0, 0}, {1, 0}, {2, 0}, {2, 1}}) {
      auto prepared = prepare_artifact(options(ranks, rank), {});
      EXPECT_TRUE(prepared) << "TP=" << ranks << " rank " << rank << ": " << prepared.status().to_string();
      if (prepared) out[{ranks, rank}] = prepared->dir;
    }
    return out;
  }();
  return dirs;
}

std::unique_ptr<Engine> load(int ranks, int rank, const std::string& nccl_id = "") {
  EngineOptions o = options(ranks, rank);
  o.artifact = artifacts().at({ranks, rank});
  o.nccl_id = nccl_id;
  auto engine = Engine::load(o);
  EXPECT_TRUE(engine) << "TP=" << ranks << " rank " << rank << ": " << engine.status().to_string();
  return engine ? std::move(*engine) : nullptr;
}

std::vector<int32_t> greedy(Engine& engine) {
  GenerateOptions g;
  g.max_new_tokens = kNewTokens;
  g.stop_at_eos = false;
  auto result = engine.generate(kPrompt, g, {});
  EXPECT_TRUE(result) << result.status().to_string();
  return result ? result->tokens : std::vector<int32_t>{};
}

TEST(TensorParallelEngine, OneRankMatchesThePlainEngine) {
  AC_REQUIRE_GPU();
  ASSERT_EQ(artifacts().size(), 4u);
  std::vector<float> plain_logits, tp_logits;
  std::vector<int32_t> plain_tokens, tp_tokens;
  {
    auto plain = load(0, 0);
    ASSERT_NE(plain, nullptr);
    auto logits = plain->teacher_forced_logits(kPrompt, 4);
    ASSERT_TRUE(logits) << logits.status().to_string();
    plain_logits = *logits;
    plain_tokens = greedy(*plain);
  }
  {
    auto tp = load(1, 0);
    ASSERT_NE(tp, nullptr);
    auto logits = tp->teacher_forced_logits(kPrompt, 4);
    ASSERT_TRUE(logits) << logits.status().to_string();
    tp_logits = *logits;
    tp_tokens = greedy(*tp);
  }
  ASSERT_EQ(tp_logits.size(), plain_logits.size());
  float scale = 0, worst = 0;
  for (size_t i = 0; i < plain_logits.size(); ++i) {
    scale = std::max(scale, std::fabs(plain_logits[i]));
    worst = std::max(worst, std::fabs(tp_logits[i] - plain_logits[i]));
  }
  // The rank module rounds o_proj's and down's products to f16 before the residual add (the plain
  // module adds in the GEMV's epilogue), so the logits differ by f16 rounding, not more.
  EXPECT_LE(worst, 2e-2f * scale) << "max abs difference " << worst << " of logits up to " << scale;
  EXPECT_EQ(tp_tokens, plain_tokens);
}

// Two ranks on two GPUs give one rank's greedy tokens. `transport` is AGENTCOMPILE_PEER_ALL_REDUCE's
// value: "0" every all-reduce on NCCL, "1" decode's over peer memory (gpu/peer_all_reduce.h), "" the
// engine's own choice by timing both (gpu/all_reduce_choice.h), which every rank must make alike.
void two_ranks_match_one(const std::string& transport) {
  ASSERT_EQ(artifacts().size(), 4u);
  int devices = 0;
  ASSERT_EQ(gpu::driver_api()->DeviceGetCount(&devices), CUDA_SUCCESS);
  if (devices < 2) GTEST_SKIP() << "one GPU: TP=2 needs two";
  std::vector<int32_t> one;
  {
    auto tp1 = load(1, 0);
    ASSERT_NE(tp1, nullptr);
    one = greedy(*tp1);
  }
  auto id = nccl_unique_id();
  ASSERT_TRUE(id) << id.status().to_string();
  std::vector<std::vector<int32_t>> tokens(2);
  std::vector<std::string> chosen(2);
  std::vector<EngineInfo> infos(2);
  std::vector<std::thread> threads;
  if (!transport.empty()) setenv("AGENTCOMPILE_PEER_ALL_REDUCE", transport.c_str(), 1);
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      auto engine = load(2, r, *id);
      if (!engine) return;
      chosen[static_cast<size_t>(r)] = engine->info().all_reduce;
      infos[static_cast<size_t>(r)] = engine->info();
      tokens[static_cast<size_t>(r)] = greedy(*engine);
    });
  for (auto& thread : threads) thread.join();
  unsetenv("AGENTCOMPILE_PEER_ALL_REDUCE");
  if (transport == "0") EXPECT_EQ(chosen[0], "nccl");
  if (transport == "1") EXPECT_EQ(chosen[0], "peer");
  if (transport.empty()) {
    EXPECT_TRUE(chosen[0] == "nccl" || chosen[0] == "peer") << chosen[0];
    std::printf("measured choice of decode's all-reduce transport: %s\n", chosen[0].c_str());
  }
  EXPECT_EQ(chosen[0], chosen[1]) << "the ranks chose different all-reduce transports";
  // Whatever the transport and however it was chosen, its decode-row all-reduce was timed (the ranks'
  // mean, so the same on both), and a decode step makes two per layer (o_proj's and down's).
  auto config = frontend::read_hf_config(fs::path(AC_SOURCE_DIR) / "tests/fixtures/configs/small-qwen3.json");
  ASSERT_TRUE(config) << config.status().to_string();
  for (const EngineInfo& info : infos) {
    EXPECT_GT(info.all_reduce_us, 0.0) << "transport " << info.all_reduce;
    EXPECT_LT(info.all_reduce_us, 1000.0) << "transport " << info.all_reduce;
    EXPECT_EQ(info.decode_all_reduces, 2 * config->num_layers);
  }
  EXPECT_EQ(infos[0].all_reduce_us, infos[1].all_reduce_us) << "the ranks' mean is one number";
  std::printf("decode-row all-reduce over %s: %.1f us, %lld per decode step\n", chosen[0].c_str(), infos[0].all_reduce_us,
              static_cast<long long>(infos[0].decode_all_reduces));
  EXPECT_EQ(tokens[0], tokens[1]) << "the ranks sample the same gathered logits";
  EXPECT_EQ(tokens[0], one);
}

TEST(TensorParallelEngine, TwoRanksOnTwoGpusMatchOneRank) {
  AC_REQUIRE_GPU();
  two_ranks_match_one("0");
}

TEST(TensorParallelEngine, TwoRanksWithThePeerAllReduceMatchOneRank) {
  AC_REQUIRE_GPU();
  two_ranks_match_one("1");
}

TEST(TensorParallelEngine, TwoRanksChooseOneTransportByTimingAndMatchOneRank) {
  AC_REQUIRE_GPU();
  two_ranks_match_one("");
}

}  // namespace
}  // namespace agentcompile
