// `--advisor command:PROG` end to end: small shell scripts (written here) answer on stdout with
// valid advice, garbage, a crash, a non-zero exit, or never (killed with their children after the
// timeout). Every compile succeeds with the outcomes counted in metadata.json, and replaying an
// artifact's advice.json reproduces the advice outcomes and selections, failures included.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include "command_runner.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "advisor-command-test";
const std::string kConfig = std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/small-qwen3.json";

using CliRun = testing::CommandRun;
CliRun run(const std::string& command) { return testing::run_command(command); }

CliRun compile(const std::string& name, const std::string& advisor_flags) {
  fs::remove_all(kWork / name);
  return run(std::string(AC_CLI) + " compile " + kConfig + " -o " + (kWork / name / "artifact").string() + " --no-gpu --force --cache-dir " +
             (kWork / "cache").string() + " --advisor-cache " + (kWork / name / "advice-cache").string() + " " + advisor_flags);
}

json metadata(const std::string& name) {
  std::ifstream in(kWork / name / "artifact" / "metadata.json");
  return json::parse(in);
}

// Writes an executable shell script; the region id and category are read from the prompt.
std::string script(const std::string& name, const std::string& body) {
  fs::create_directories(kWork / "scripts");
  const fs::path path = kWork / "scripts" / (name + ".sh");
  std::ofstream(path) << "#!/bin/sh\n"
                      << "prompt=$(cat)\n"
                      << "region_json=$(printf '%s' \"$prompt\" | grep -o '\"region\":{[^}]*}' | head -1)\n"
                      << "region=$(printf '%s' \"$region_json\" | grep -o '\"id\":\"[^\"]*\"' | cut -d'\"' -f4)\n"
                      << "category=$(printf '%s' \"$region_json\" | grep -o '\"category\":\"[^\"]*\"' | cut -d'\"' -f4)\n"
                      << body << "\n";
  fs::permissions(path, fs::perms::owner_all);
  return "command:" + path.string();
}

struct Outcomes {
  size_t asked = 0, answered = 0, failed = 0, accepted = 0, rejected = 0, ignored = 0;
  std::vector<std::string> errors;
};

Outcomes outcomes(const json& meta) {
  Outcomes o;
  for (const auto& region : meta["regions"]) {
    const json& a = region["advice"];
    if (!a["asked"].get<bool>()) continue;
    ++o.asked;
    (a["exchange"]["ok"].get<bool>() ? o.answered : o.failed) += 1;
    if (!a["exchange"]["ok"].get<bool>()) o.errors.push_back(a["exchange"]["error"]);
    o.accepted += a["counts"]["accepted"].get<size_t>();
    o.rejected += a["counts"]["rejected"].get<size_t>();
    o.ignored += a["counts"]["ignored"].get<size_t>();
  }
  const json& c = meta["advisor"]["counts"];
  EXPECT_EQ(c["asked"].get<size_t>(), o.asked);
  EXPECT_EQ(c["answered"].get<size_t>(), o.answered);
  EXPECT_EQ(c["failed"].get<size_t>(), o.failed);
  EXPECT_EQ(c["accepted"].get<size_t>(), o.accepted);
  EXPECT_EQ(c["rejected"].get<size_t>(), o.rejected);
  EXPECT_EQ(c["ignored"].get<size_t>(), o.ignored);
  // Nothing lost: every region keeps a selection and every generated candidate compiled.
  for (const auto& region : meta["regions"]) {
    for (const auto& s : region["selection"]) EXPECT_FALSE(s["candidate"].is_null()) << region["id"];
    for (const auto& candidate : region["candidates"]) {
      if (candidate["source_class"] == "library") continue;
      EXPECT_TRUE(candidate["compile"]["ok"].get<bool>()) << candidate["name"];
    }
  }
  return o;
}

const std::string kValid =
    "printf '{\"region\":\"%s\",\"label\":\"%s\",\"priority\":[\"c1\",\"c0\",\"c1\"],\"hints\":{},\"risks\":[],\"why\":\"scripted\"}\\n' "
    "\"$region\" \"$category\"";

TEST(AdvisorCommand, ValidAdviceFromAProgram) {
  const CliRun r = compile("valid", "--advisor " + script("valid", kValid) + " --advisor-scope auto -v");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("advice (command:"), std::string::npos) << r.output;
  const Outcomes o = outcomes(metadata("valid"));
  ASSERT_GT(o.asked, 0u);
  EXPECT_EQ(o.answered, o.asked);
  EXPECT_EQ(o.accepted, 3 * o.asked);  // label, c1, c0
  EXPECT_EQ(o.ignored, 2 * o.asked);   // the duplicate c1 and "why"
  EXPECT_EQ(o.rejected, 0u);
  for (const auto& region : metadata("valid")["regions"]) {
    if (!region["advice"]["asked"].get<bool>()) continue;
    EXPECT_EQ(region["search"]["order"][0], "c1");
    EXPECT_EQ(region["search"]["order"][1], "c0");
  }

  // The advisor settings are part of the artifact key: the same compile is warm (and says what the
  // advice was), another scope is not.
  const std::string again = std::string(AC_CLI) + " compile " + kConfig + " -o " + (kWork / "valid" / "artifact").string() +
                            " --no-gpu --cache-dir " + (kWork / "cache").string() + " --advisor " + script("valid", kValid);
  const CliRun warm = run(again + " --advisor-scope auto");
  ASSERT_EQ(warm.status, 0) << warm.output;
  EXPECT_NE(warm.output.find("warm"), std::string::npos) << warm.output;
  EXPECT_NE(warm.output.find("advice (command:"), std::string::npos) << warm.output;
  const std::string other_dir = (kWork / "valid" / "scope-all").string();
  const CliRun other = run(std::string(AC_CLI) + " compile " + kConfig + " -o " + other_dir + " --no-gpu --force --cache-dir " +
                           (kWork / "cache").string() + " --advisor " + script("valid", kValid) + " --advisor-scope all");
  ASSERT_EQ(other.status, 0) << other.output;
  std::ifstream other_meta(other_dir + "/metadata.json");
  EXPECT_NE(json::parse(other_meta)["key"], metadata("valid")["key"]);
}

TEST(AdvisorCommand, GarbageCrashesAndExitsAreCounted) {
  {
    const CliRun r = compile("garbage", "--advisor " + script("garbage", "echo 'c1 looks fastest to me'") + " --advisor-scope auto");
    ASSERT_EQ(r.status, 0) << r.output;
    const Outcomes o = outcomes(metadata("garbage"));
    ASSERT_GT(o.asked, 0u);
    EXPECT_EQ(o.answered, o.asked);
    EXPECT_EQ(o.rejected, o.asked);
    EXPECT_EQ(o.accepted, 0u);
  }
  {
    const CliRun r = compile("crash", "--advisor " + script("crash", "echo '{\"priority\": [' ; kill -SEGV $$") + " --advisor-scope auto");
    ASSERT_EQ(r.status, 0) << r.output;
    const Outcomes o = outcomes(metadata("crash"));
    ASSERT_GT(o.asked, 0u);
    EXPECT_EQ(o.failed, o.asked);
    for (const auto& e : o.errors) EXPECT_NE(e.find("killed by signal 11"), std::string::npos) << e;
  }
  {
    const CliRun r = compile("exit", "--advisor " + script("exit", "echo 'model not found' >&2; exit 2") + " --advisor-scope auto");
    ASSERT_EQ(r.status, 0) << r.output;
    const Outcomes o = outcomes(metadata("exit"));
    ASSERT_GT(o.asked, 0u);
    EXPECT_EQ(o.failed, o.asked);
    for (const auto& e : o.errors) EXPECT_NE(e.find("exited with status 2: model not found"), std::string::npos) << e;
  }
}

TEST(AdvisorCommand, AProgramThatNeverAnswersIsKilledWithItsChildren) {
  const fs::path pids = kWork / "hang-pids";
  fs::remove(pids);
  const CliRun r = compile("hang", "--advisor " + script("hang", "sleep 120 & echo $! >> " + pids.string() + "; wait") +
                                       " --advisor-scope auto --advisor-timeout 1");
  ASSERT_EQ(r.status, 0) << r.output;
  const Outcomes o = outcomes(metadata("hang"));
  ASSERT_GT(o.asked, 0u);
  EXPECT_EQ(o.failed, o.asked);
  for (const auto& e : o.errors) EXPECT_NE(e.find("no answer within 1 s"), std::string::npos) << e;
  EXPECT_LT(r.seconds, 1.0 * static_cast<double>(o.asked) + 30);
  // The programs' own children (sleep 120) are gone too.
  std::ifstream in(pids);
  int pid, count = 0;
  while (in >> pid) {
    ++count;
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = kill(pid, 0) != 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << "sleep " << pid << " outlived its advisor program";
  }
  EXPECT_EQ(static_cast<size_t>(count), o.asked);
}

TEST(AdvisorCommand, ReplayReproducesOutcomesAndSelections) {
  // Valid advice for decode regions, a crash for prefill ones.
  const std::string body = "case \"$region\" in prefill*) kill -SEGV $$;; esac\n" + kValid;
  ASSERT_EQ(compile("recorded", "--advisor " + script("mixed", body) + " --advisor-scope all --search-budget 3").status, 0);
  const CliRun replay = compile("replayed", "--advisor replay:" + (kWork / "recorded" / "artifact").string() +
                                                " --advisor-scope all --search-budget 3");
  ASSERT_EQ(replay.status, 0) << replay.output;
  const json a = metadata("recorded"), b = metadata("replayed");
  const Outcomes oa = outcomes(a), ob = outcomes(b);
  EXPECT_GT(oa.failed, 0u);
  EXPECT_GT(oa.answered, 0u);
  EXPECT_EQ(oa.failed, ob.failed);
  EXPECT_EQ(oa.accepted, ob.accepted);
  EXPECT_EQ(oa.errors, ob.errors);
  for (size_t r = 0; r < a["regions"].size(); ++r) {
    const json &ra = a["regions"][r], &rb = b["regions"][r];
    for (const char* part : {"asked", "why", "request_hash", "accepted", "rejected", "ignored", "counts"})
      EXPECT_EQ(ra["advice"].value(part, json()), rb["advice"].value(part, json())) << ra["id"] << " " << part;
    EXPECT_EQ(ra["search"], rb["search"]) << ra["id"];
    EXPECT_EQ(ra["selection"], rb["selection"]) << ra["id"];
  }
  // A replay file without the exchange a request needs: a failed exchange, not a failed compile.
  const CliRun other_scope = compile("replay-miss", "--advisor replay:" + (kWork / "recorded" / "artifact" / "advice.json").string() +
                                                        " --advisor-scope all --max-candidates 4");
  ASSERT_EQ(other_scope.status, 0) << other_scope.output;
  const Outcomes miss = outcomes(metadata("replay-miss"));
  EXPECT_GT(miss.failed, 0u);
  for (const auto& e : miss.errors) EXPECT_NE(e.find("no recorded exchange"), std::string::npos) << e;
  // A replay file that does not exist is a clear error.
  const CliRun missing = compile("replay-missing", "--advisor replay:" + (kWork / "nothing.json").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.output.find("cannot open the advice file"), std::string::npos) << missing.output;
}

}  // namespace
}  // namespace agentcompile
