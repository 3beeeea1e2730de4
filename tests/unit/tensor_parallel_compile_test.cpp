// `compile --tensor-parallel 2 --device-profile h200` on the CPU (the dry run: planned, generated and
// compiled by NVRTC, nothing validated or timed): one artifact per rank, each with the rank's per-rank
// shapes and its collective regions' NCCL calls selected, and the ranks' keys differ (their parameters'
// checkpoint ranges differ). On Qwen3-8B in bf16, the residual add after each all-reduce and the norm
// after it open the next GEMV (the add-only residual-norm prologue): no region is left of them alone.
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

// A rank's decode step: o_proj and down end in an all-reduce, so the residual add that follows cannot
// be their epilogue; the add and the next RMSNorm open the next GEMV instead (gate/up, the next
// layer's QKV, the LM head), whose block 0 writes the sum for the residual stream. Every such
// candidate compiles (NVRTC, sm_90a).
TEST(TensorParallelCompile, TheAddAfterEachAllReduceOpensTheNextGemv) {
  const fs::path work = fs::path(AC_BINARY_DIR) / "tensor-parallel-add-norm";
  fs::remove_all(work);
  const auto run = testing::run_cli("compile " + (fs::path(AC_SOURCE_DIR) / "configs/qwen3-8b.json").string() + " -o " +
                                    (work / "out").string() + " --tensor-parallel 2 --no-gpu --device-profile h200 --cache-dir " +
                                    (work / "cache").string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json meta = read_json(work / "out" / "rank0" / "metadata.json");
  int opened = 0;
  for (const auto& region : meta["regions"]) {
    if (region.value("function", "") != "decode") continue;
    const auto ops = region["summary"]["ops"].get<std::vector<std::string>>();
    EXPECT_FALSE(ops == (std::vector<std::string>{"add", "rmsnorm"})) << region["id"] << ": an add + norm region of its own";
    if (ops.size() < 3 || ops[0] != "add" || ops[1] != "rmsnorm" || ops[2] != "linear") continue;
    ++opened;
    bool gemv = false;
    for (const auto& c : region["candidates"]) {
      EXPECT_TRUE(c["compile"].value("ok", false)) << c["name"] << ":\n" << c["compile"].value("log", "");
      if (c["family"] != "gemv") continue;
      gemv = true;
      EXPECT_EQ(c["name"].get<std::string>().rfind("gemv_add_rmsnorm_", 0), 0u) << c["name"];
      EXPECT_EQ(c["facts"].value("add_norm", 0), 1) << c["name"];
      EXPECT_TRUE(c["roles"].contains("skip") && !c["roles"].contains("post_w")) << c["name"];
      // The sum is written where the residual stream goes on; before the LM head nothing reads it.
      EXPECT_EQ(c["roles"].contains("h"), ops.size() > 3) << c["name"];
    }
    EXPECT_TRUE(gemv) << region["id"];
  }
  EXPECT_EQ(opened, 3);  // gate/up, the next layer's QKV, the LM head
}

}  // namespace
}  // namespace agentcompile
