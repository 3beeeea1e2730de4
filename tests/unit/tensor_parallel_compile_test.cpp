// `compile --tensor-parallel 2 --device-profile h200` on the CPU (the dry run: planned, generated and
// compiled by NVRTC, nothing validated or timed): one artifact per rank, each with the rank's per-rank
// shapes and its collective regions' NCCL calls selected, and the ranks' keys differ (their parameters'
// checkpoint ranges differ).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "command_runner.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path;
  return in.good() ? nlohmann::json::parse(in) : nlohmann::json();
}

TEST(TensorParallelCompile, DryRunWritesEveryRanksArtifact) {
  const fs::path work = fs::path(AC_BINARY_DIR) / "tensor-parallel-compile";
  fs::remove_all(work);
  fs::create_directories(work / "model");
  fs::copy_file(fs::path(AC_SOURCE_DIR) / "tests/fixtures/configs/tp-qwen3.json", work / "model/config.json");
  const auto run = testing::run_cli("compile " + (work / "model").string() + " -o " + (work / "out").string() +
                                    " --tensor-parallel 2 --device-profile h200 --cache-dir " + (work / "cache").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::string keys[2];
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const nlohmann::json meta = read_json(work / "out" / ("rank" + std::to_string(rank)) / "metadata.json");
    ASSERT_TRUE(meta.contains("regions"));
    keys[rank] = meta.value("key", "");
    int collectives = 0;
    for (const auto& region : meta["regions"])
      for (const auto& pick : region["selection"]) {
        const std::string kernel = pick.value("kernel", "");
        if (kernel.rfind("nccl_", 0) != 0) continue;
        ++collectives;
        EXPECT_EQ(pick.value("source_class", ""), "library") << kernel;
        EXPECT_NE(kernel.find("_r2_"), std::string::npos) << kernel;  // over two ranks
      }
    // prefill: o_proj/down's all_reduce (one unique region, 3 buckets) and the LM head's all_gather (3);
    // decode: one of each.
    EXPECT_EQ(collectives, 8);
    // The peer all-reduce ships beside the sampler, so the runtime can take decode's rows off NCCL.
    ASSERT_TRUE(meta.contains("runtime_kernels"));
    EXPECT_TRUE(meta["runtime_kernels"].contains("sampler"));
    ASSERT_TRUE(meta["runtime_kernels"].contains("peer_all_reduce"));
    EXPECT_TRUE(fs::is_regular_file(work / "out" / ("rank" + std::to_string(rank)) /
                                    meta["runtime_kernels"]["peer_all_reduce"].value("cubin", "")));
  }
  EXPECT_FALSE(keys[0].empty());
  EXPECT_NE(keys[0], keys[1]);
}

}  // namespace
}  // namespace agentcompile
