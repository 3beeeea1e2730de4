// The KernelBench-shaped captured fixtures (python/make_capture_fixtures.py) whose regions need the
// capabilities added for issue 21's fast_0 target (index-dependent epilogues, reductions of every
// shape and dtype, batched matmuls with a T batch): each compiles for the H200 profile with at least
// one candidate for every region (no GPU: plan, render and NVRTC), and the reference interpreter
// reproduces the outputs PyTorch recorded for the fixture's own inputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "command_runner.h"
#include "scratch_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

const char* const kFixtures[] = {"triu_matmul"};

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

}  // namespace
}  // namespace agentcompile
