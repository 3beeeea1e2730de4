// `agentcompile compile` never destroys data and never reuses a damaged artifact, driven through the
// CLI on the tiny fixtures without a GPU: an output directory that is not an artifact (a project,
// $HOME, the model, the cache) is refused and left as it was; a failed emit leaves the previous
// artifact whole; a missing, truncated or edited file in the artifact, in the artifact cache or in
// the NVRTC cache is found and compiled again; a metadata.json of any wrong shape is an error or a
// recompile, never an abort; three compiles into one output at once all succeed.
//
// The checks look only at the CLI's exit status, its messages and the files, so they run unchanged
// against any version of the compiler.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "scratch_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::CommandRun;

const std::string kModel = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/tiny-qwen2.json";
const std::string kOtherModel = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/tiny-qwen3.json";

fs::path work_dir(const std::string& name) { return testing::scratch_dir("artifact-safety-test", name); }
std::string read_bytes(const fs::path& path) { return testing::file_bytes(path); }
std::map<std::string, std::string> snapshot(const fs::path& dir) { return testing::tree_snapshot(dir); }

// The artifact without metadata.json and report.md (which record timings and cache hits), plus its
// key: what two compiles of one model with one set of options must agree on.
std::map<std::string, std::string> artifact_content(const fs::path& dir) {
  auto entries = snapshot(dir);
  entries.erase("metadata.json");
  entries.erase("report.md");
  const json meta = json::parse(read_bytes(dir / "metadata.json"), nullptr, false);
  entries["(key)"] = meta.is_object() && meta.contains("key") && meta["key"].is_string() ? meta["key"].get<std::string>() : "(none)";
  return entries;
}

// Two snapshots agree; else the entries that differ, by name (their bytes would drown the message).
::testing::AssertionResult same_files(const std::map<std::string, std::string>& got, const std::map<std::string, std::string>& want) {
  if (got == want) return ::testing::AssertionSuccess();
  std::string text;
  for (const auto& [name, bytes] : got)
    if (!want.count(name)) text += "  extra: " + name + "\n";
    else if (want.at(name) != bytes) text += "  changed: " + name + (name == "(key)" ? " " + bytes + " vs " + want.at(name) : "") + "\n";
  for (const auto& [name, bytes] : want)
    if (!got.count(name)) text += "  missing: " + name + "\n";
  return ::testing::AssertionFailure() << "the files differ:\n" << text;
}

std::string compile_args(const std::string& model, const fs::path& out, const fs::path& cache) {
  return "compile --no-gpu --device-profile h200 --max-candidates 1 " + model + " -o " + out.string() + " --cache-dir " + cache.string();
}

CommandRun compile(const std::string& model, const fs::path& out, const fs::path& cache, const std::string& extra = "") {
  return testing::run_cli(compile_args(model, out, cache) + " " + extra);
}

// Leftover temporary directories of a write beside `dir`.
size_t temporaries_beside(const fs::path& dir) {
  size_t count = 0;
  for (const auto& item : fs::directory_iterator(dir.parent_path()))
    if (item.path().filename().string().rfind("." + dir.filename().string() + ".tmp", 0) == 0) ++count;
  return count;
}

TEST(ArtifactSafety, ProjectDirectoryIsRefusedAndUntouched) {
  const fs::path work = work_dir("project");
  const fs::path project = work / "project";
  fs::create_directories(project / "include");
  fs::create_directories(project / "src");
  std::ofstream(project / "include" / "api.h") << "int api();\n";
  std::ofstream(project / "src" / "main.cpp") << "int main() {}\n";
  std::ofstream(project / "README.md") << "my project\n";
  const auto before = snapshot(project);

  const CommandRun run = testing::run_command("cd " + project.string() + " && " + AC_CLI + " " + compile_args(kModel, ".", work / "cache"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("not an agentcompile artifact"), std::string::npos) << run.output;
  EXPECT_TRUE(same_files(snapshot(project), before)) << "compile -o . changed a project directory";
}

TEST(ArtifactSafety, HomeModelAndCacheDirectoriesAreRefused) {
  const fs::path work = work_dir("paths");
  // $HOME, even empty (so only the path rule can refuse it); the default cache would lie inside it.
  const fs::path home = work / "home";
  fs::create_directories(home);
  CommandRun run = testing::run_command("env -u XDG_CACHE_HOME HOME=" + home.string() + " " + AC_CLI +
                                        " compile --no-gpu --device-profile h200 --max-candidates 1 " + kModel + " -o " + home.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("home directory"), std::string::npos) << run.output;
  EXPECT_TRUE(snapshot(home).empty()) << "compile -o $HOME wrote into it";
  run = testing::run_command("HOME=" + home.string() + " " + AC_CLI + " " + compile_args(kModel, work, work / "cache-elsewhere"));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("holds your home directory"), std::string::npos) << run.output;

  // The model directory, and a directory holding it.
  const fs::path model = work / "model";
  fs::create_directories(model);
  for (const auto& item : fs::directory_iterator(fs::path(AC_SOURCE_DIR) / "tests/fixtures/models/tiny-qwen2"))
    fs::copy_file(item.path(), model / item.path().filename());
  const auto model_before = snapshot(model);
  run = compile(model.string(), model, work / "cache");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("it is the model"), std::string::npos) << run.output;
  run = compile((model / "config.json").string(), model, work / "cache");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("holds the model"), std::string::npos) << run.output;
  EXPECT_TRUE(same_files(snapshot(model), model_before)) << "compile -o MODEL changed the model";

  // The cache, and an output holding it (both still missing, so only the path rule can refuse).
  run = compile(kModel, work / "out", work / "out" / "cache");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("agentcompile's cache"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(work / "out"));
  run = compile(kModel, work / "cache2", work / "cache2");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_FALSE(fs::exists(work / "cache2" / "metadata.json"));
}

TEST(ArtifactSafety, AnArtifactHoldingOtherFilesIsNotReplaced) {
  const fs::path work = work_dir("foreign-files");
  const fs::path out = work / "artifact";
  CommandRun run = compile(kModel, out, work / "cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  fs::create_directories(out / "build");
  std::ofstream(out / "build" / "libkernels.a") << "a user's build\n";
  std::ofstream(out / "notes.txt") << "a user's notes\n";
  const auto before = snapshot(out);
  run = compile(kOtherModel, out, work / "cache");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("notes.txt"), std::string::npos) << run.output;
  EXPECT_TRUE(same_files(snapshot(out), before));
}

// The emit fails part way (a file-size limit stops the largest file, metadata.json): the artifact
// that was there stays whole, and no temporary directory is left behind.
TEST(ArtifactSafety, FailedEmitLeavesThePreviousArtifact) {
  const fs::path work = work_dir("failed-emit");
  const fs::path out = work / "artifact";
  constexpr uintmax_t kLimit = 64 * 1024;
  // What the failure needs: the other model's metadata.json is over the limit, every other file under it.
  CommandRun run = compile(kOtherModel, work / "probe", work / "probe-cache");  // its own cache: the emit below is not a cache copy
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const auto& [rel, bytes] : snapshot(work / "probe"))
    if (rel == "metadata.json") ASSERT_GT(bytes.size(), kLimit) << "the failure injection needs a larger metadata.json";
    else ASSERT_LT(bytes.size(), kLimit) << rel << ": the failure injection needs files under " << kLimit << " bytes";

  run = compile(kModel, out, work / "cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto before = snapshot(out);
  run = testing::run_command("bash -c \"ulimit -f " + std::to_string(kLimit / 1024) + "; trap '' XFSZ; exec " + AC_CLI + " " +
                             compile_args(kOtherModel, out, work / "cache") + "\"");
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_TRUE(same_files(snapshot(out), before)) << "a failed emit changed the artifact that was there";
  EXPECT_EQ(temporaries_beside(out), 0u);

  run = compile(kModel, out, work / "cache");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("up to date"), std::string::npos) << run.output;
}

TEST(ArtifactSafety, DamagedArtifactIsCompiledAgainNotReused) {
  const fs::path work = work_dir("damaged-output");
  const fs::path out = work / "artifact";
  CommandRun run = compile(kModel, out, work / "cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto good = artifact_content(out);
  std::vector<fs::path> cubins, kernels;
  for (const auto& item : fs::directory_iterator(out / "cubin")) cubins.push_back(item.path());
  for (const auto& item : fs::directory_iterator(out / "kernels")) kernels.push_back(item.path());
  ASSERT_GE(cubins.size(), 2u);
  ASSERT_FALSE(kernels.empty());

  const std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"truncated cubin", [&] { fs::resize_file(cubins[0], fs::file_size(cubins[0]) / 2); }},
      {"missing cubin", [&] { fs::remove(cubins[1]); }},
      {"edited kernel", [&] { std::ofstream(kernels[0], std::ios::app) << "// edited\n"; }},
  };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    damage();
    run = compile(kModel, out, work / "cache");
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(run.output.find("up to date"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find("damaged"), std::string::npos) << run.output;
    EXPECT_TRUE(same_files(artifact_content(out), good)) << "the damaged artifact was not compiled again";
  }
  // --force compiles even an intact artifact again.
  run = compile(kModel, out, work / "cache", "--force");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("compiled artifact"), std::string::npos) << run.output;
}

TEST(ArtifactSafety, DamagedCacheEntryIsDiscarded) {
  const fs::path work = work_dir("damaged-cache");
  const fs::path cache = work / "cache";
  CommandRun run = compile(kModel, work / "first", cache);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto good = artifact_content(work / "first");
  const fs::path entry = cache / "artifacts" / good.at("(key)");
  ASSERT_TRUE(fs::exists(entry / "cubin")) << "the cache holds no copy of the artifact";
  std::vector<fs::path> cubins;
  for (const auto& item : fs::directory_iterator(entry / "cubin")) cubins.push_back(item.path());
  ASSERT_GE(cubins.size(), 2u);
  fs::resize_file(cubins[0], 16);
  fs::remove(cubins[1]);

  run = compile(kModel, work / "second", cache);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("discarded"), std::string::npos) << run.output;
  EXPECT_TRUE(same_files(artifact_content(work / "second"), good)) << "a damaged cache entry was copied";
}

TEST(ArtifactSafety, TruncatedNvrtcCubinIsCompiledAgain) {
  const fs::path work = work_dir("damaged-nvrtc");
  const fs::path cache = work / "cache";
  CommandRun run = compile(kModel, work / "first", cache);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  size_t truncated = 0;
  for (const auto& item : fs::recursive_directory_iterator(cache / "nvrtc"))
    if (item.path().extension() == ".cubin") {
      fs::resize_file(item.path(), fs::file_size(item.path()) / 2);
      ++truncated;
    }
  ASSERT_GT(truncated, 0u);
  run = compile(kModel, work / "second", cache, "--force");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(same_files(snapshot(work / "second" / "cubin"), snapshot(work / "first" / "cubin"))) << "truncated cached cubins were used";
}

// --dump-ir listings are files of the artifact: written with it (not into the output beforehand,
// where the emit removed them), and an artifact without them is not reused for a compile that asks.
TEST(ArtifactSafety, DumpIrListingsAreInTheArtifact) {
  const fs::path work = work_dir("dump-ir");
  CommandRun run = compile(kModel, work / "plain", work / "cache");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  run = compile(kModel, work / "dumped", work / "cache", "--dump-ir");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* listing : {"ir/prefill.regions.txt", "ir/decode.regions.txt"})
    EXPECT_GT(fs::exists(work / "dumped" / listing) ? fs::file_size(work / "dumped" / listing) : 0, 0u) << listing;
}

// Not a JSON object, or an object whose members have the wrong types, or cut short.
const std::vector<std::string> kWrongShapes = {
    "[1, 2, 3]", "42", "\"metadata\"", "null", "{\"format\": 5}", "{\"format\": \"agentcompile-artifact/2\", \"key\": [1]}",
    "{\"format\": \"agentcompile-artifact/2\", \"key\": \"k\", \"model\": 3, \"device\": [], \"regions\": {}}",
    "{\"format\": \"agentcompile-artif"};

TEST(ArtifactSafety, WrongShapedMetadataInTheOutputNeverAborts) {
  const fs::path work = work_dir("shapes-output");
  for (const std::string& shape : kWrongShapes) {
    SCOPED_TRACE(shape);
    const fs::path out = work / "artifact";
    fs::remove_all(out);
    fs::create_directories(out);
    std::ofstream(out / "metadata.json") << shape;
    const CommandRun run = compile(kModel, out, work / "cache");
    EXPECT_TRUE(run.exit_code == 0 || run.exit_code == 1) << "exit " << run.exit_code << "\n" << run.output;
    const bool ours = shape.find("\"agentcompile-artifact/2\"") != std::string::npos;
    if (ours) {  // recognisably an agentcompile artifact, if a broken one: compiled again
      EXPECT_EQ(run.exit_code, 0) << run.output;
      EXPECT_NE(artifact_content(out).at("(key)"), "(none)");
    } else {     // someone else's metadata.json: refused, left as it was
      EXPECT_EQ(run.exit_code, 1) << run.output;
      EXPECT_NE(run.output.find("not an agentcompile artifact"), std::string::npos) << run.output;
      EXPECT_EQ(read_bytes(out / "metadata.json"), shape);
    }
  }
}

TEST(ArtifactSafety, WrongShapedMetadataInTheCacheIsDiscarded) {
  const fs::path work = work_dir("shapes-cache");
  const fs::path cache = work / "cache";
  CommandRun run = compile(kModel, work / "first", cache);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto good = artifact_content(work / "first");
  const fs::path entry = cache / "artifacts" / good.at("(key)");
  for (const std::string& shape : kWrongShapes) {
    SCOPED_TRACE(shape);
    fs::create_directories(entry);
    std::ofstream(entry / "metadata.json") << shape;
    fs::remove_all(work / "again");
    run = compile(kModel, work / "again", cache);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_NE(run.output.find("discarded"), std::string::npos) << run.output;
    EXPECT_TRUE(same_files(artifact_content(work / "again"), good));
  }
}

// Three compiles into one output directory (and one cache entry) at once, in several rounds: every
// one succeeds and the directory ends up holding one whole artifact, the one a lone compile makes.
TEST(ArtifactSafety, ConcurrentCompilesIntoOneOutputAllSucceed) {
  const fs::path work = work_dir("concurrent");
  const fs::path cache = work / "cache";
  CommandRun run = compile(kModel, work / "reference", cache);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto reference = artifact_content(work / "reference");
  const fs::path out = work / "shared";
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::future<CommandRun>> runs;
    for (int i = 0; i < 3; ++i)
      runs.push_back(std::async(std::launch::async, [&] { return compile(kModel, out, cache, "--force"); }));
    for (auto& r : runs) {
      const CommandRun done = r.get();
      EXPECT_EQ(done.exit_code, 0) << done.output;
    }
    EXPECT_TRUE(same_files(artifact_content(out), reference));
    EXPECT_EQ(temporaries_beside(out), 0u);
    run = compile(kModel, out, cache);
    EXPECT_NE(run.output.find("up to date"), std::string::npos) << run.output;
  }
}

}  // namespace
}  // namespace agentcompile
