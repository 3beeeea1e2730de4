// The device sampler against its definition: greedy picks the first maximum; the repetition
// penalty moves the maximum; top-k and top-p draw only from the kept set, with frequencies that
// follow the renormalized softmax; a seed reproduces draws; position and step counters advance; a row
// without a number (all NaN) marks its step -1 for the host.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "codegen/nvrtc_compiler.h"
#include "emit/artifact_record.h"
#include "gpu/device_probe.h"
#include "gpu_test_support.h"
#include "runtime/sampler.h"
#include "gpu/cuda_driver.h"

namespace agentcompile::runtime {
namespace {

struct Rig {
  std::unique_ptr<gpu::CudaContext> context;
  std::unique_ptr<DeviceSampler> sampler;
  gpu::DeviceBuffer logits;
  int64_t vocab = 0;

  static Rig create(int64_t vocab) {
    Rig rig;
    rig.vocab = vocab;
    auto context = gpu::CudaContext::create();
    EXPECT_TRUE(context) << context.status().to_string();
    rig.context = std::move(*context);
    // The sampler kernel as a compile builds it into the artifact (pipeline/generate.cpp).
    codegen::NvrtcOptions nvrtc;
    nvrtc.arch = gpu::nvrtc_arch(rig.context->info());
    nvrtc.cache_dir = std::filesystem::path(AC_BINARY_DIR) / "sampler-test-nvrtc";
    auto compiled = codegen::compile_all({{emit::kSamplerKernel.kernel, emit::kSamplerKernel.source}}, nvrtc);
    EXPECT_TRUE(compiled && compiled->size() == 1 && (*compiled)[0].ok) << (compiled ? (*compiled)[0].log : compiled.status().to_string());
    auto sampler = DeviceSampler::create(vocab, 4096, compiled ? (*compiled)[0].cubin : std::vector<char>{});
    EXPECT_TRUE(sampler) << sampler.status().to_string();
    rig.sampler = std::move(*sampler);
    auto buffer = gpu::DeviceBuffer::allocate(static_cast<size_t>(vocab) * 4);
    EXPECT_TRUE(buffer) << buffer.status().to_string();
    rig.logits = std::move(*buffer);
    return rig;
  }

  // Draws `n` tokens from `values` with `sampling` (one sampler call each, as decode steps do).
  std::vector<int32_t> draw(const std::vector<float>& values, const SamplingOptions& sampling, int n, std::vector<int32_t> seen = {}) {
    EXPECT_TRUE(logits.upload(values.data(), values.size() * 4));
    EXPECT_TRUE(sampler->reset(seen, sampling));
    EXPECT_TRUE(sampler->configure(DeviceSampler::Use::kDecode, logits.ptr(), 1));
    for (int i = 0; i < n; ++i) EXPECT_TRUE(sampler->enqueue(DeviceSampler::Use::kDecode, context->stream()));
    EXPECT_TRUE(context->synchronize());
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) out.push_back(sampler->token_of_step(i));
    return out;
  }
};

TEST(DeviceSampler, GreedyPenaltyTopKTopPAndSeeds) {
  AC_REQUIRE_GPU();
  const int64_t V = 151936;  // Qwen's vocabulary: more than one block's worth per thread
  Rig rig = Rig::create(V);
  ASSERT_TRUE(rig.sampler) << "the sampler did not load";
  std::vector<float> values(static_cast<size_t>(V), -5.f);
  values[70000] = 3.f;
  values[90000] = 3.f;  // a tie: the first index wins
  values[1000] = 2.9f;
  EXPECT_EQ(rig.draw(values, {}, 1)[0], 70000);

  // Repetition penalty: 3.0 / 1.2 = 2.5 and 2.9 stays, so 1000 wins when 70000 and 90000 were seen.
  SamplingOptions penalty;
  penalty.repetition_penalty = 1.2f;
  EXPECT_EQ(rig.draw(values, penalty, 1, {70000, 90000})[0], 1000);

  // top-k 3 over a graded distribution: only the three largest appear, in softmax proportions.
  std::vector<float> graded(static_cast<size_t>(V), -20.f);
  const std::vector<std::pair<int, float>> top = {{5, 2.0f}, {77777, 1.5f}, {150000, 1.0f}, {12, 0.9f}, {13, 0.8f}};
  for (auto [id, x] : top) graded[static_cast<size_t>(id)] = x;
  SamplingOptions k3;
  k3.temperature = 1.f;
  k3.top_k = 3;
  k3.seed = 42;
  const int draws = 3000;
  const auto tokens = rig.draw(graded, k3, draws);
  std::map<int32_t, int> counts;
  for (int32_t t : tokens) ++counts[t];
  double z = 0;
  for (int i = 0; i < 3; ++i) z += std::exp(top[static_cast<size_t>(i)].second);
  for (auto [id, c] : counts) EXPECT_TRUE(id == 5 || id == 77777 || id == 150000) << "top-k 3 drew " << id;
  for (int i = 0; i < 3; ++i) {
    const double p = std::exp(top[static_cast<size_t>(i)].second) / z;
    const double sigma = std::sqrt(p * (1 - p) / draws);
    EXPECT_NEAR(counts[top[static_cast<size_t>(i)].first] / static_cast<double>(draws), p, 4 * sigma) << "token " << top[static_cast<size_t>(i)].first;
  }
  EXPECT_EQ(rig.draw(graded, k3, 50), std::vector<int32_t>(tokens.begin(), tokens.begin() + 50)) << "a seed must reproduce its draws";

  // top-p: probabilities 0.5, 0.3, 0.15, 0.05 (and ~0 elsewhere); p = 0.7 keeps the first two.
  std::vector<float> mass(static_cast<size_t>(V), -80.f);
  const std::vector<std::pair<int, double>> probs = {{10, 0.5}, {20, 0.3}, {30, 0.15}, {40, 0.05}};
  for (auto [id, p] : probs) mass[static_cast<size_t>(id)] = static_cast<float>(std::log(p));
  SamplingOptions p7;
  p7.temperature = 1.f;
  p7.top_p = 0.7f;
  p7.seed = 7;
  counts.clear();
  for (int32_t t : rig.draw(mass, p7, draws)) ++counts[t];
  for (auto [id, c] : counts) EXPECT_TRUE(id == 10 || id == 20) << "top-p 0.7 drew " << id;
  EXPECT_NEAR(counts[10] / static_cast<double>(draws), 0.5 / 0.8, 0.04);

  // top-p 0.9 keeps three; temperature 0 is greedy whatever the other settings.
  p7.top_p = 0.9f;
  counts.clear();
  for (int32_t t : rig.draw(mass, p7, draws)) ++counts[t];
  EXPECT_GT(counts[30], 0);
  EXPECT_EQ(counts[40], 0);
  SamplingOptions greedy = p7;
  greedy.temperature = 0.f;
  EXPECT_EQ(rig.draw(mass, greedy, 3), (std::vector<int32_t>{10, 10, 10}));
}

TEST(DeviceSampler, ARowWithoutANumberMarksItsStep) {
  AC_REQUIRE_GPU();
  Rig rig = Rig::create(1000);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> values(1000, nan);
  EXPECT_EQ(rig.draw(values, SamplingOptions{}, 2), (std::vector<int32_t>{-1, -1}));
  SamplingOptions hot;
  hot.temperature = 0.8f;
  hot.top_p = 0.9f;
  EXPECT_EQ(rig.draw(values, hot, 1), (std::vector<int32_t>{-1}));
  for (size_t i = 0; i < values.size(); ++i) values[i] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(rig.draw(values, SamplingOptions{}, 1), (std::vector<int32_t>{-1}));
  // One number among NaNs is a choice: NaN never wins, and nothing is marked.
  values.assign(1000, nan);
  values[417] = -3.f;
  EXPECT_EQ(rig.draw(values, SamplingOptions{}, 1), (std::vector<int32_t>{417}));
}

}  // namespace
}  // namespace agentcompile::runtime
