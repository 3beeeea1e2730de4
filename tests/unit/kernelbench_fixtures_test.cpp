// The KernelBench-shaped captured fixtures (python/make_capture_fixtures.py) whose regions need the
// capabilities added for issue 21's fast_0 target (index-dependent epilogues, reductions of every
// shape and dtype, batched matmuls with a T batch): each compiles for the H200 profile with at least
// one candidate for every region (no GPU: plan, render and NVRTC), and the reference interpreter
// reproduces the outputs PyTorch recorded for the fixture's own inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "command_runner.h"
#include "scratch_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

const char* const kFixtures[] = {"triu_matmul", "gemm_batchnorm_f16", "cross_entropy", "triplet_margin", "sdpa_batched", "mse_loss", "instance_norm_f16", "batch_norm",
                                   "gemm_dropout_softmax_f16", "random_draws"};

fs::path fixture_dir(const std::string& name) { return fs::path(AC_SOURCE_DIR) / "tests/fixtures/captured" / name; }

class KernelBenchFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(KernelBenchFixture, EveryRegionHasACandidateForH200) {
  const fs::path work = testing::scratch_dir("kernelbench-fixtures", GetParam());
  const testing::CommandRun run = testing::run_cli("compile " + fixture_dir(GetParam()).string() + " --device-profile h200 -o " +
                                                   (work / "artifact").string() + " --cache-dir " + (work / "cache").string());
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.output.find("no candidates"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("NVRTC compiled"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("NVRTC compiled 0 "), std::string::npos) << run.output;
}

TEST_P(KernelBenchFixture, TheReferenceMatchesPyTorch) {
  const fs::path dir = fixture_dir(GetParam());
  const fs::path work = testing::scratch_dir("kernelbench-fixtures", std::string(GetParam()) + "-cpu");
  const testing::CommandRun run = testing::run_cli("run-function " + dir.string() + " --cpu --inputs " + (dir / "inputs.safetensors").string() +
                                                   " --check " + (dir / "reference_outputs.safetensors").string() + " --outputs " +
                                                   (work / "out.safetensors").string());
  EXPECT_EQ(run.status, 0) << run.output;
}

INSTANTIATE_TEST_SUITE_P(Captured, KernelBenchFixture, ::testing::ValuesIn(kFixtures));

// The ops of each region of an artifact, in region order, as its report.md lists them ("ops: a b c; ...").
std::vector<std::string> region_ops(const fs::path& artifact) {
  const std::string report = testing::file_bytes(artifact / "report.md");
  std::vector<std::string> ops;
  for (size_t at = report.find("\nops: "); at != std::string::npos; at = report.find("\nops: ", at + 1)) {
    const size_t begin = at + 6, end = report.find(';', begin);
    ops.push_back(report.substr(begin, end - begin));
  }
  return ops;
}

// Gemm + BatchNorm in f16 (KernelBench L2 41): the batch statistics read an f32 copy of the linear's f16
// result, and the normalization the f16 result itself. Each statistic widens the f16 result itself
// (recompute_widening_casts), so the matmul region writes that one tensor, in f16: no f32 copy of the
// whole output reaches memory (the region once stored both through a program epilogue).
TEST(KernelBenchFixtures, BatchStatisticsWidenTheMatmulsF16Result) {
  const fs::path work = testing::scratch_dir("kernelbench-fixtures", "two-outputs");
  const testing::CommandRun run =
      testing::run_cli("compile " + fixture_dir("gemm_batchnorm_f16").string() + " --device-profile h200 --dump-ir -o " +
                       (work / "artifact").string() + " --cache-dir " + (work / "cache").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const std::vector<std::string> found = region_ops(work / "artifact");
  const std::vector<std::string> expected = {"linear", "cast reduce_mean", "cast sub mul reduce_sum",
                                             "div cast cast add rsqrt sub mul mul add gelu relu"};
  EXPECT_EQ(found, expected);
  const std::string candidates = testing::file_bytes(work / "artifact/ir/forward.candidates.txt");
  const std::string r0 = candidates.substr(0, candidates.find("\nr1 "));
  EXPECT_EQ(r0.find("cast"), std::string::npos) << r0;  // no epilogue writes an f32 copy
}

// A loss or norm over every element reads its pointwise chain through a reshape, which recognition moves
// onto the inputs (reshape_pointwise_inputs): MSELoss is one reduction region reading p and t (the squares
// never reach memory), and InstanceNorm's mean and variance are each one reduction region that reads the
// f16 input and widens it itself (recompute_widening_casts: no f32 copy of x, no (x - mean)^2 tensor), the
// variance's mean a per-row broadcast operand.
// BatchNorm's statistics read x in place instead of a transposed copy (its x - mean is still written once
// for the normalization: the schedule keeps the shared subtraction before the statistics).
TEST(KernelBenchFixtures, ReductionsOverReshapedChainsAreOneRegion) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"mse_loss", {"sub pow reduce_mean"}},
      {"instance_norm_f16", {"cast reduce_mean", "cast sub mul reduce_sum", "div cast cast add rsqrt sub mul"}},
      // BatchNorm2d: each statistic reduces the trailing axes, then the batch (reduce_without_transposes)
      {"batch_norm", {"reduce_mean", "reduce_mean", "sub", "sub mul reduce_sum", "reduce_sum", "div add rsqrt mul mul add"}},
  };
  for (const auto& [name, regions] : expected) {
    const fs::path work = testing::scratch_dir("kernelbench-fixtures", name + "-regions");
    const testing::CommandRun run = testing::run_cli("compile " + fixture_dir(name).string() + " --device-profile h200 -o " +
                                                     (work / "artifact").string() + " --cache-dir " + (work / "cache").string());
    ASSERT_EQ(run.status, 0) << run.output;
    EXPECT_EQ(region_ops(work / "artifact"), regions) << name;
  }
}

// CrossEntropyLoss counts the targets it keeps: a reduce_sum of i32 values over a 1-D axis, which
// the reduction family accumulates in int (exact, wrapping like the reference's int32), not fp32.
TEST(KernelBenchFixtures, AnIntegerSumAccumulatesInInt) {
  const fs::path work = testing::scratch_dir("kernelbench-fixtures", "integer-sum");
  const testing::CommandRun run = testing::run_cli("compile " + fixture_dir("cross_entropy").string() + " --device-profile h200 -o " +
                                                   (work / "artifact").string() + " --cache-dir " + (work / "cache").string());
  ASSERT_EQ(run.status, 0) << run.output;
  int integer_kernels = 0;
  for (const auto& entry : fs::directory_iterator(work / "artifact/kernels")) {
    const std::string source = testing::file_bytes(entry.path());
    if (source.find("using Acc = int;") == std::string::npos) continue;
    ++integer_kernels;
    EXPECT_NE(source.find("ac::kRowSum"), std::string::npos) << entry.path();
    EXPECT_NE(source.find("s1[row] = value;"), std::string::npos) << entry.path();  // the count, not an index
  }
  EXPECT_GT(integer_kernels, 0);
}

// Dropout in training mode (KernelBench L2 66 in miniature): its mask is random_uniform, computed where
// it is read, so the linear's epilogue draws it (every GEMM candidate's epilogue calls ac::random_uniform
// with the capture's seed) and no random tensor reaches memory.
TEST(KernelBenchFixtures, DropoutDrawsItsMaskInTheLinearsEpilogue) {
  const fs::path work = testing::scratch_dir("kernelbench-fixtures", "dropout");
  const testing::CommandRun run = testing::run_cli("compile " + fixture_dir("gemm_dropout_softmax_f16").string() +
                                                   " --device-profile h200 --dump-ir -o " + (work / "artifact").string() +
                                                   " --cache-dir " + (work / "cache").string());
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(region_ops(work / "artifact"), (std::vector<std::string>{"linear ge cast mul cast where", "softmax"}));
  const std::string module = testing::file_bytes(fixture_dir("gemm_dropout_softmax_f16") / "module.ir");
  EXPECT_NE(module.find("random_uniform {seed = 0, shape = [T, 6]}"), std::string::npos) << module;
  int epilogues = 0;
  for (const auto& entry : fs::directory_iterator(work / "artifact/kernels")) {
    const std::string source = testing::file_bytes(entry.path());
    if (source.find("ge_cast_mul") == std::string::npos) continue;
    ++epilogues;
    EXPECT_NE(source.find("ac::random_uniform(0ULL, static_cast<unsigned long long>(row * 6LL + col + e))"), std::string::npos)
        << entry.path();
  }
  EXPECT_EQ(epilogues, 1);  // the selected one (no GPU: the planner's first)
}

// Attention of plain tensors with a T batch ([T, heads, S, D], KernelBench L1 97): the lowered
// matmuls are T * heads products of one cuBLAS strided-batched call (D = 32 here; the flash prefill
// family's contract, causal attention over a KV cache with D up to 256, does not fit such a module).
TEST(KernelBenchFixtures, ABatchOfTTimesHeadsIsOneBatchedGemm) {
  const fs::path work = testing::scratch_dir("kernelbench-fixtures", "t-batch");
  const testing::CommandRun run = testing::run_cli("compile " + fixture_dir("sdpa_batched").string() + " --device-profile h200 -o " +
                                                   (work / "artifact").string() + " --cache-dir " + (work / "cache").string());
  ASSERT_EQ(run.status, 0) << run.output;
  const std::string metadata = testing::file_bytes(work / "artifact/metadata.json");
  EXPECT_NE(metadata.find("\"batch\": \"T*8\""), std::string::npos) << "no gemm_batched launch over T * 8 products";
}

}  // namespace
}  // namespace agentcompile
