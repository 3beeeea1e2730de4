// The artifact's one reader and the pieces the atomic write stands on: metadata.json of any shape is
// an error naming the member (never an exception), a real artifact reads back and verifies, a file
// list cannot point outside the artifact, output paths are judged against the model, the cache and
// $HOME, a directory swap replaces a previous one whole, and a lock keeps writers apart.
#include "emit/artifact_record.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <thread>

#include "emit/artifact_key.h"
#include "emit/artifact_store.h"
#include "emit/output_dir.h"
#include "support/durable_files.h"
#include "support/file_lock.h"
#include "command_runner.h"

namespace agentcompile::emit {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path work_dir(const std::string& name) {
  const fs::path dir = fs::path(AC_BINARY_DIR) / "artifact-record-test" / (name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// One no-GPU compile shared by the tests of this process.
const fs::path& artifact_dir() {
  static const fs::path dir = [] {
    const fs::path work = work_dir("compiled");
    const testing::CommandRun run = testing::run_cli("compile --no-gpu --device-profile h200 --max-candidates 1 " + std::string(AC_SOURCE_DIR) +
                                                     "/tests/fixtures/configs/tiny-qwen2.json -o " + (work / "artifact").string() +
                                                     " --cache-dir " + (work / "cache").string());
    EXPECT_EQ(run.exit_code, 0) << run.output;
    return work / "artifact";
  }();
  return dir;
}

json metadata() {
  std::ifstream in(artifact_dir() / "metadata.json");
  return json::parse(in);
}

TEST(ArtifactRecord, ARealArtifactReadsBackAndVerifies) {
  auto record = read_artifact_record(artifact_dir());
  ASSERT_TRUE(record) << record.status().to_string();
  EXPECT_EQ(record->format, kArtifactFormat);
  EXPECT_EQ(record->key.size(), 64u);
  EXPECT_EQ(record->device.arch, "sm_90a");
  EXPECT_FALSE(record->gpu_used);
  EXPECT_TRUE(record->functions.count("prefill") && record->functions.count("decode"));
  ASSERT_FALSE(record->regions.empty());
  for (const auto& region : record->regions)
    for (const auto& s : region.selections)
      if (s.candidate) { EXPECT_TRUE(region.selected.count(*s.candidate)) << region.id << " " << *s.candidate; }
  bool lists_cubin = false;
  for (const auto& file : record->files) lists_cubin |= file.path.rfind("cubin/", 0) == 0;
  EXPECT_TRUE(lists_cubin);
  // The sampler ships with the model's kernels (the module generates: it has a decode function).
  ASSERT_EQ(record->runtime_kernels.count(kSamplerKernel.role), 1u);
  EXPECT_EQ(record->runtime_kernels.at(kSamplerKernel.role).kernel, kSamplerKernel.kernel);
  EXPECT_EQ(record->runtime_kernels.at(kSamplerKernel.role).cubin, "cubin/ac_sample.cubin");
  EXPECT_TRUE(check_runtime_kernels(*record).is_ok());
  ArtifactRecord before = *record;
  before.runtime_kernels.clear();
  EXPECT_EQ(check_runtime_kernels(before).code(), ErrorCode::kNotFound);
  before.functions.erase("decode");  // a plain module (one function) needs no sampler
  before.functions.erase("prefill");
  EXPECT_TRUE(check_runtime_kernels(before).is_ok());
  EXPECT_TRUE(verify_artifact_files(artifact_dir(), *record).is_ok());
  auto verified = read_verified_artifact(artifact_dir());
  EXPECT_TRUE(verified) << verified.status().to_string();
}

TEST(ArtifactRecord, EveryWrongShapeIsAnErrorNamingTheMember) {
  const json good = metadata();
  struct Case {
    std::string what;
    std::function<void(json&)> damage;
    std::string named;  // what the message must mention
  };
  const std::vector<Case> cases = {
      {"array", [](json& m) { m = json::array({1, 2}); }, "not a JSON object"},
      {"number", [](json& m) { m = 7; }, "not a JSON object"},
      {"string", [](json& m) { m = "x"; }, "not a JSON object"},
      {"format type", [](json& m) { m["format"] = 2; }, "format"},
      {"another format", [](json& m) { m["format"] = "agentcompile-artifact/1"; }, "agentcompile-artifact/1"},
      {"key type", [](json& m) { m["key"] = json::array(); }, "key"},
      {"model type", [](json& m) { m["model"] = "qwen"; }, "model"},
      {"device arch", [](json& m) { m["device"]["arch"] = 90; }, "device"},
      {"no files", [](json& m) { m.erase("files"); }, "files"},
      {"file size", [](json& m) { m["files"][0]["bytes"] = "many"; }, "files"},
      {"file outside", [](json& m) { m["files"][0]["path"] = "../../etc/passwd"; }, "not a file of the artifact"},
      {"absolute file", [](json& m) { m["files"][0]["path"] = "/etc/passwd"; }, "not a file of the artifact"},
      {"regions type", [](json& m) { m["regions"] = json::object(); }, "regions"},
      {"candidates type", [](json& m) { m["regions"][0]["candidates"] = 5; }, "region"},
      {"selection type", [](json& m) { m["regions"][0]["selection"][0]["candidate"] = 5; }, "selection"},
      {"unlisted selection", [](json& m) { m["regions"][0]["selection"][0]["candidate"] = "c99"; }, "c99"},
      {"launch type", [](json& m) {
         for (auto& c : m["regions"][0]["candidates"]) c["launches"] = json::array({"x"});
       }, "launch"},
      {"sites type", [](json& m) { m["functions"]["prefill"]["sites"][0]["inputs"] = "x"; }, "function prefill"},
      {"unknown region", [](json& m) { m["functions"]["decode"]["sites"][0]["region"] = "nowhere"; }, "nowhere"},
      {"runtime kernels type", [](json& m) { m["runtime_kernels"] = json::array(); }, "runtime_kernels"},
      {"runtime kernel cubin type", [](json& m) { m["runtime_kernels"]["sampler"]["cubin"] = 3; }, "runtime_kernels.sampler"},
      {"runtime kernel cubin unlisted", [](json& m) { m["runtime_kernels"]["sampler"]["cubin"] = "cubin/elsewhere.cubin"; }, "not a listed file"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    json m = good;
    c.damage(m);
    Expected<ArtifactRecord> record = error(ErrorCode::kInternal, "not run");
    EXPECT_NO_THROW(record = parse_artifact_record(m, "metadata.json"));
    ASSERT_FALSE(record);
    EXPECT_NE(record.status().message().find(c.named), std::string::npos) << record.status().to_string();
  }
  auto truncated = parse_artifact_text(good.dump().substr(0, 500), "metadata.json");
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.status().code(), ErrorCode::kParse);
}

TEST(ArtifactRecord, VerificationNamesTheDamagedFile) {
  const fs::path copy = work_dir("verify") / "artifact";
  fs::copy(artifact_dir(), copy, fs::copy_options::recursive);
  auto record = read_artifact_record(copy);
  ASSERT_TRUE(record);
  const FileEntry& file = record->files.back();
  std::ofstream(copy / file.path, std::ios::app) << "x";
  Status status = verify_artifact_files(copy, *record);
  EXPECT_EQ(status.code(), ErrorCode::kMismatch);
  EXPECT_NE(status.message().find(file.path), std::string::npos) << status.to_string();
  fs::remove(copy / file.path);
  status = verify_artifact_files(copy, *record);
  EXPECT_NE(status.message().find("missing"), std::string::npos) << status.to_string();
}

// Every part of the key changes it: an artifact is reused only by a compile that would produce it again,
// so a compiler whose planner or renderers changed (another compiler_sources_hash) does not reuse it.
TEST(ArtifactKey, EveryPartChangesTheKey) {
  emit::ArtifactKeyParts base;
  base.compiler_version = "agentcompile-compiler/6";
  base.ir_text = "module m\n";
  base.arch = "sm_90a";
  base.nvrtc_version = "13.0";
  base.options = {{"max_candidates", 8}};
  base.kernel_headers_hash = "k";
  base.compiler_sources_hash = "s";
  base.run_sizes = "forward:T=4;";
  base.runtime_kernels = {"ac_sample"};
  const std::string key = emit::artifact_key(base);
  EXPECT_EQ(key, emit::artifact_key(base));
  std::vector<std::function<void(emit::ArtifactKeyParts&)>> edits = {
      [](auto& p) { p.compiler_version += "x"; }, [](auto& p) { p.ir_text += "x"; },
      [](auto& p) { p.arch = "sm_80"; },           [](auto& p) { p.device_profile = "h200"; },
      [](auto& p) { p.nvrtc_version += "x"; },     [](auto& p) { p.options["max_candidates"] = 4; },
      [](auto& p) { p.gpu = true; },               [](auto& p) { p.kernel_headers_hash += "x"; },
      [](auto& p) { p.compiler_sources_hash += "x"; }, [](auto& p) { p.run_sizes += "x"; },
      [](auto& p) { p.runtime_kernels.clear(); }};
  for (size_t i = 0; i < edits.size(); ++i) {
    emit::ArtifactKeyParts edited = base;
    edits[i](edited);
    EXPECT_NE(emit::artifact_key(edited), key) << "edit " << i;
  }
}

TEST(OutputDir, PathsAreJudgedAgainstTheModelTheCacheAndHome) {
  const fs::path work = work_dir("paths");
  const fs::path home = work / "home", model = work / "models" / "m", cache = work / "cache";
  ::setenv("HOME", home.c_str(), 1);
  EXPECT_TRUE(check_output_location(home / "out", model, cache).is_ok());
  EXPECT_TRUE(check_output_location(model / "artifact", model, cache).is_ok());  // inside the model: touches nothing of it
  EXPECT_TRUE(check_output_location(cache / "models" / "x", model, cache).is_ok());  // compile on first use
  for (const fs::path& refused : {home, work, model, work / "models", cache, cache / "artifacts" / "k", fs::path("/"),
                                  home / ".." / "home" / "."})
    EXPECT_EQ(check_output_location(refused, model, cache).code(), ErrorCode::kInvalidArgument) << refused;
  ::setenv("HOME", "/", 1);  // some containers: everything lies under it, and that alone refuses nothing
  EXPECT_TRUE(check_output_location(work / "out", model, cache).is_ok());

  fs::create_directories(work / "project" / "src");
  EXPECT_EQ(check_output_replaceable(work / "project").code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(check_output_replaceable(work / "missing").is_ok());
  fs::create_directories(work / "empty");
  EXPECT_TRUE(check_output_replaceable(work / "empty").is_ok());
  EXPECT_TRUE(check_output_replaceable(artifact_dir()).is_ok());
}

TEST(DurableFiles, ADirectorySwapReplacesThePreviousOneWhole) {
  const fs::path work = work_dir("swap");
  const fs::path target = work / "out";
  fs::create_directories(target / "old");
  std::ofstream(target / "old" / "a") << "old";
  auto staged = support::make_temp_dir_beside(target, "tmp");
  ASSERT_TRUE(staged) << staged.status().to_string();
  EXPECT_EQ(staged->parent_path(), target.parent_path());
  std::ofstream(*staged / "new") << "new";
  ASSERT_TRUE(support::replace_directory(*staged, target).is_ok());
  EXPECT_TRUE(fs::exists(target / "new"));
  EXPECT_FALSE(fs::exists(target / "old"));
  EXPECT_FALSE(fs::exists(*staged));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& item : fs::directory_iterator(work)) ++entries;
  EXPECT_EQ(entries, 1u) << "the previous directory was left behind";

  EXPECT_TRUE(support::path_within(work / "a" / ".." / "out", work));
  EXPECT_FALSE(support::path_within(work / "outside", work / "out"));
  EXPECT_FALSE(support::path_within(work / "out2", work / "out"));  // a prefix of the name is not containment
}

TEST(FileLock, AnExclusiveLockWaitsForTheHolder) {
  const fs::path lock_file = support::FileLock::beside(work_dir("lock") / "dir");
  auto held = support::FileLock::acquire(lock_file, support::FileLock::Mode::kExclusive);
  ASSERT_TRUE(held) << held.status().to_string();
  std::atomic<bool> acquired{false};
  std::thread other([&] {
    auto second = support::FileLock::acquire(lock_file, support::FileLock::Mode::kExclusive);
    acquired = second.has_value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(acquired) << "a second writer got the lock while the first held it";
  *held = support::FileLock();  // release
  other.join();
  EXPECT_TRUE(acquired);
}

}  // namespace
}  // namespace agentcompile::emit
