// On the GPU: whole compiles of a small Qwen3 against one cache directory. The first measures every
// candidate and fills the tuning database; the second (forced past the artifact cache) takes every
// validation and timing from the database, starts no worker, says so in its log, metadata and
// report, and selects exactly the same kernels; --retune measures again; a database whose files
// were damaged is ignored with a warning and the compile measures what it must. Every compile
// reports measured seconds per admission stage.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "agentcompile/compiler.h"
#include "gpu_test_support.h"
#include "support/durable_files.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kWork = fs::path(AC_BINARY_DIR) / "compile-tuning-db-test";

struct Compiled {
  json meta;
  std::string report;
  std::string log;
};

Compiled compile(CompileOptions options, const std::string& output) {
  options.output = kWork / output;
  Compiled c;
  auto summary = compile_model(options, [&](const std::string& line) { c.log += line + "\n"; });
  EXPECT_TRUE(summary.has_value()) << summary.status().to_string() << "\n" << c.log;
  if (!summary) return c;
  std::ifstream meta(options.output / "metadata.json");
  c.meta = json::parse(meta);
  auto report = support::read_file_bytes(options.output / "report.md");
  EXPECT_TRUE(report.has_value());
  if (report) c.report = *report;
  std::printf("--- %s\n%s", output.c_str(), c.log.c_str());
  return c;
}

// Region id -> the kernel selected for each bucket, in order.
std::map<std::string, std::vector<std::string>> selections(const json& meta) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& region : meta["regions"])
    for (const auto& s : region["selection"]) out[region["id"]].push_back(s.value("kernel", std::string("none")));
  return out;
}

int faulted(const json& meta) {
  int n = 0;
  for (const auto& region : meta["regions"])
    for (const auto& c : region["candidates"]) n += c["validation"].value("faulted", false);
  return n;
}

TEST(CompileTuningDb, ASecondCompileReusesTheMeasurementsAndPicksTheSame) {
  AC_REQUIRE_GPU();
  fs::remove_all(kWork);
  CompileOptions options;
  options.model = fs::path(AC_SOURCE_DIR) / "tests/fixtures/configs/small-qwen3.json";
  options.cache_dir = kWork / "cache";
  options.repetitions = 10;

  const Compiled cold = compile(options, "cold");
  ASSERT_TRUE(cold.meta.is_object());
  const json& cold_db = cold.meta["tuning"];
  EXPECT_GT(cold_db["candidates_measured"].get<int>(), 0);
  EXPECT_EQ(cold_db["candidates_reused"].get<int>(), 0);
  const json& cold_times = cold.meta["compile_seconds"]["admission"];
  EXPECT_GT(cold_times["reference_s"].get<double>(), 0.0);
  EXPECT_GT(cold_times["timing_run_s"].get<double>(), 0.0);
  EXPECT_GE(cold_times["workers"].get<int>(), 1);
  EXPECT_LE(cold_times["workers"].get<int>(), 1 + faulted(cold.meta)) << "one worker for the compile, one more per fault";
  EXPECT_NE(cold.report.find("Admission, stage by stage"), std::string::npos);
  EXPECT_TRUE(fs::exists(kWork / "cache" / "tuning"));

  // The same compile again, past the artifact cache: everything from the database.
  options.force = true;
  const Compiled warm = compile(options, "from-database");
  ASSERT_TRUE(warm.meta.is_object());
  const json& db = warm.meta["tuning"];
  EXPECT_EQ(db["candidates_measured"].get<int>(), faulted(cold.meta)) << "only faults are measured again";
  EXPECT_EQ(db["candidates_reused"].get<int>(), cold_db["candidates_measured"].get<int>() - faulted(cold.meta));
  EXPECT_TRUE(db["warnings"].empty()) << db["warnings"].dump();
  if (faulted(cold.meta) == 0) {
    EXPECT_EQ(warm.meta["compile_seconds"]["admission"]["workers"].get<int>(), 0) << "no GPU work at all";
    EXPECT_LT(warm.meta["compile_seconds"]["admit"].get<double>(), cold.meta["compile_seconds"]["admit"].get<double>());
  }
  EXPECT_EQ(selections(warm.meta), selections(cold.meta));
  EXPECT_NE(warm.log.find("from the tuning database"), std::string::npos);
  EXPECT_NE(warm.report.find("(tuning database)"), std::string::npos);
  for (const auto& region : warm.meta["regions"])
    for (const auto& c : region["candidates"]) {
      const json& v = c["validation"];
      // Not measured (the budget), a fault (never stored) or a compile error (rejected without the GPU).
      if (v["status"] == "not measured" || v.value("faulted", false) || v.value("reason", std::string()).rfind("compile error", 0) == 0) continue;
      EXPECT_EQ(c.value("source", std::string()), "tuning database") << region["id"] << " " << c["name"];
    }
  if (warm.meta.contains("context_tuning"))
    for (const auto& bucket : warm.meta["context_tuning"]) {
      if (bucket.contains("error")) continue;
      EXPECT_EQ(bucket.value("source", std::string()), "tuning database") << bucket.dump();
    }

  // --retune reads nothing (and is not stopped by the artifact cache).
  CompileOptions retune = options;
  retune.force = false;
  retune.retune = true;
  retune.context_tuning = false;
  retune.search.budget = 1;
  const Compiled again = compile(retune, "retune");
  ASSERT_TRUE(again.meta.is_object());
  EXPECT_EQ(again.meta["tuning"]["candidates_reused"].get<int>(), 0);
  EXPECT_GT(again.meta["tuning"]["candidates_measured"].get<int>(), 0);
  EXPECT_NE(again.report.find("--retune"), std::string::npos);

  // Damaged files: a warning each, never a failure, and the regions are measured.
  for (const auto& entry : fs::directory_iterator(kWork / "cache" / "tuning")) {
    if (entry.path().extension() != ".json") continue;
    ASSERT_TRUE(support::replace_file_atomically(entry.path(), "{\"entries\": [1, 2").is_ok());
  }
  CompileOptions damaged = options;
  damaged.context_tuning = false;
  damaged.search.budget = 1;
  const Compiled repaired = compile(damaged, "damaged");
  ASSERT_TRUE(repaired.meta.is_object());
  EXPECT_FALSE(repaired.meta["tuning"]["warnings"].empty());
  EXPECT_NE(repaired.log.find("note: tuning database"), std::string::npos);
  EXPECT_GT(repaired.meta["tuning"]["candidates_measured"].get<int>(), 0);
  EXPECT_EQ(repaired.meta["tuning"]["candidates_reused"].get<int>(), 0);
}

}  // namespace
}  // namespace agentcompile
