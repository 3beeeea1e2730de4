// `agentcompile init-random --out DIR` never destroys a checkpoint: a directory it did not write is
// refused and left as it was (unless --force, which replaces only the new checkpoint's files), a
// failure part way leaves the previous checkpoint whole, and rewriting its own checkpoint keeps the
// files beside it.
//
// The checks look only at the CLI's exit status, its messages and the files, so they run unchanged
// against any version of the tool.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "command_runner.h"
#include "scratch_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using testing::CommandRun;

const std::string kConfig = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/tiny-qwen3.json";
const fs::path kFixture = fs::path(AC_SOURCE_DIR) / "tests/fixtures/models/tiny-qwen3";

fs::path work_dir(const std::string& name) { return testing::scratch_dir("init-random-safety-test", name); }
std::string read_bytes(const fs::path& path) { return testing::file_bytes(path); }
std::map<std::string, std::string> snapshot(const fs::path& dir) { return testing::tree_snapshot(dir); }

// Two snapshots agree; else the entries that differ, by name.
::testing::AssertionResult same_files(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  std::string text;
  for (const auto& [name, bytes] : got)
    if (!want.count(name)) text += "  extra: " + name + "\n";
    else if (want.at(name) != bytes) text += "  changed: " + name + "\n";
  for (const auto& [name, bytes] : want)
    if (!got.count(name)) text += "  missing: " + name + "\n";
  return ::testing::AssertionFailure() << "the files differ:\n" << text;
}

std::string init_args(const fs::path& out, int seed) {
  return "init-random --config " + kConfig + " --dtype f32 --seed " + std::to_string(seed) + " --out " + out.string();
}

// A checkpoint someone else wrote (the fixture, with its reference outputs) and a file of the user's.
fs::path foreign_checkpoint(const fs::path& work) {
  const fs::path dir = work / "theirs";
  fs::create_directories(dir);
  for (const auto& item : fs::directory_iterator(kFixture)) fs::copy_file(item.path(), dir / item.path().filename());
  std::ofstream(dir / "tokenizer.json") << "{\"model\": {}}\n";
  return dir;
}

size_t temporaries_beside(const fs::path& dir) {
  size_t count = 0;
  for (const auto& item : fs::directory_iterator(dir.parent_path()))
    if (item.path().filename().string().rfind("." + dir.filename().string() + ".", 0) == 0) ++count;
  return count;
}

TEST(InitRandomSafety, ADirectoryItDidNotWriteIsRefusedAndUntouched) {
  const fs::path work = work_dir("foreign");
  const fs::path dir = foreign_checkpoint(work);
  const auto before = snapshot(dir);
  const CommandRun run = testing::run_cli(init_args(dir, 5));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("--force"), std::string::npos) << run.output;
  EXPECT_TRUE(same_files(snapshot(dir), before)) << "init-random changed a checkpoint it did not write";
  EXPECT_EQ(temporaries_beside(dir), 0u);
}

TEST(InitRandomSafety, ForceReplacesOnlyTheCheckpointsFiles) {
  const fs::path work = work_dir("force");
  const fs::path dir = foreign_checkpoint(work);
  const auto before = snapshot(dir);
  CommandRun run = testing::run_cli(init_args(dir, 5) + " --force");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const CommandRun fresh = testing::run_cli(init_args(work / "fresh", 5));
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  for (const char* kept : {"tokenizer.json", "reference.json", "reference.safetensors"})
    EXPECT_EQ(read_bytes(dir / kept), before.at(kept)) << kept;
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), read_bytes(work / "fresh" / "model.safetensors"));

  // A weight file of another layout that init-random did not write would be read with the new
  // checkpoint: refused even with --force.
  const fs::path shadowed = foreign_checkpoint(work / "shadowed");
  fs::rename(shadowed / "model.safetensors", shadowed / "model-00001-of-00002.safetensors");
  const auto shadowed_before = snapshot(shadowed);
  run = testing::run_cli(init_args(shadowed, 5) + " --force");
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("model-00001-of-00002.safetensors"), std::string::npos) << run.output;
  EXPECT_TRUE(same_files(snapshot(shadowed), shadowed_before));
}

TEST(InitRandomSafety, RewritingItsOwnCheckpointKeepsOtherFiles) {
  const fs::path work = work_dir("own");
  const fs::path dir = work / "checkpoint";
  CommandRun run = testing::run_cli(init_args(dir, 1));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ofstream(dir / "README.md") << "notes\n";
  run = testing::run_cli(init_args(dir, 2));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = testing::run_cli(init_args(work / "fresh", 2));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(read_bytes(dir / "README.md"), "notes\n");
  EXPECT_EQ(read_bytes(dir / "model.safetensors"), read_bytes(work / "fresh" / "model.safetensors"));
}

// The write fails part way (a file-size limit stops the weights): the checkpoint that was there,
// its own or someone else's, stays whole and no temporary directory is left behind.
TEST(InitRandomSafety, FailurePartWayLeavesThePreviousCheckpoint) {
  const fs::path work = work_dir("failure");
  const fs::path own = work / "own";
  CommandRun run = testing::run_cli(init_args(own, 1));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ASSERT_GT(fs::file_size(own / "model.safetensors"), 64u * 1024) << "the failure injection needs weights over the limit";
  for (const auto& [dir, extra] : {std::pair{own, std::string()}, std::pair{foreign_checkpoint(work), std::string(" --force")}}) {
    SCOPED_TRACE(dir.string());
    const auto before = snapshot(dir);
    run = testing::run_command("bash -c \"ulimit -f 64; trap '' XFSZ; exec " + std::string(AC_CLI) + " " + init_args(dir, 2) + extra + "\"");
    EXPECT_NE(run.exit_code, 0) << run.output;
    EXPECT_TRUE(same_files(snapshot(dir), before)) << "a failed init-random changed the checkpoint that was there";
    EXPECT_EQ(temporaries_beside(dir), 0u);
  }
}

}  // namespace
}  // namespace agentcompile
