// `compile --dump-ir` writes a listing after every stage into the artifact's ir/ folder (src/pipeline/
// dump_ir.cpp), each one a file the artifact lists, the same text when compiled again; the captured
// module goes beside module.ir only when recognition changed it.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "command_runner.h"
#include "scratch_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kStageListings = {"regions", "candidates", "advised", "generated", "admitted", "selected", "context-tuned"};

std::string compile(const std::string& fixture, const fs::path& out, const fs::path& cache, const std::string& extra = "") {
  const testing::CommandRun run = testing::run_cli("compile " + std::string(AC_SOURCE_DIR) + "/tests/fixtures/captured/" + fixture +
                                                   " --dump-ir --device-profile h200 -o " + out.string() + " --cache-dir " +
                                                   cache.string() + " " + extra);
  EXPECT_EQ(run.status, 0) << run.output;
  return run.output;
}

std::set<std::string> listed_files(const fs::path& artifact) {
  const nlohmann::json meta = nlohmann::json::parse(testing::file_bytes(artifact / "metadata.json"));
  std::set<std::string> files;
  for (const auto& f : meta["files"]) files.insert(f["path"].get<std::string>());
  return files;
}

TEST(DumpIr, EveryStageWritesItsListing) {
  const fs::path work = testing::scratch_dir("dump-ir", "every-stage");
  compile("rmsnorm", work / "a", work / "cache");
  const std::set<std::string> listed = listed_files(work / "a");
  std::vector<std::string> expected = {"ir/module.ir", "ir/captured.ir"};  // recognition raised the primitive norm
  for (const auto& stage : kStageListings) expected.push_back("ir/forward." + stage + ".txt");
  for (const auto& file : expected) {
    EXPECT_TRUE(fs::is_regular_file(work / "a" / file)) << file;
    EXPECT_TRUE(listed.count(file)) << file << " is not among the artifact's files";
    EXPECT_FALSE(testing::file_bytes(work / "a" / file).empty()) << file;
  }
  const std::string captured = testing::file_bytes(work / "a" / "ir" / "captured.ir");
  const std::string module = testing::file_bytes(work / "a" / "ir" / "module.ir");
  EXPECT_EQ(module.find("reduce_mean"), std::string::npos) << module;
  EXPECT_NE(module.find("rmsnorm("), std::string::npos) << module;
  EXPECT_NE(captured.find("reduce_mean"), std::string::npos) << captured;
  EXPECT_NE(testing::file_bytes(work / "a" / "ir" / "forward.candidates.txt").find("c0 "), std::string::npos);
  EXPECT_NE(testing::file_bytes(work / "a" / "ir" / "forward.admitted.txt").find("not admitted (no GPU"), std::string::npos);
  EXPECT_NE(testing::file_bytes(work / "a" / "ir" / "forward.context-tuned.txt").find("did not run (no GPU)"), std::string::npos);

  // Compiled again (from the NVRTC cache this time): the same listings, byte for byte.
  compile("rmsnorm", work / "b", work / "cache", "--force");
  for (const auto& file : expected)
    EXPECT_EQ(testing::file_bytes(work / "a" / file), testing::file_bytes(work / "b" / file)) << file;
}

TEST(DumpIr, NoCapturedModuleWhereRecognitionChangedNothing) {
  const fs::path work = testing::scratch_dir("dump-ir", "unchanged");
  compile("relu", work / "a", work / "cache");
  EXPECT_FALSE(fs::exists(work / "a" / "ir" / "captured.ir"));
  EXPECT_TRUE(fs::exists(work / "a" / "ir" / "forward.selected.txt"));
}

}  // namespace
}  // namespace agentcompile
