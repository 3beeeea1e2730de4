// The candidates of a corpus of models, pinned (tests/unit/candidate_dump.h) under
// tests/golden/candidates/: hashes of every candidate's record and rendered source, per candidate as
// `compile` plans them on an H200, per region for the other settings. A change to what the planner
// or a renderer produces shows here by model, setting, region and candidate; the whole dump
// (records and sources) is written to <build>/candidate-dump/ to see what changed. Every source names
// each of its template arguments.
#include <gtest/gtest.h>

#include <filesystem>
#include <cctype>
#include <fstream>
#include <set>

#include "candidate_dump.h"
#include "golden.h"
#include "plan/template_family.h"

namespace agentcompile {
namespace {

// The arguments of every `ac::<template><...>` in `source` that are not named "/*NAME=*/value"
// (codegen::template_args).
std::vector<std::string> unnamed_template_arguments(const std::string& source) {
  std::vector<std::string> unnamed;
  for (size_t call = source.find("ac::"); call != std::string::npos; call = source.find("ac::", call + 4)) {
    size_t at = call + 4;
    while (at < source.size() && (std::isalnum(static_cast<unsigned char>(source[at])) || source[at] == '_')) ++at;
    if (at >= source.size() || source[at] != '<') continue;
    const std::string name = source.substr(call, at - call);
    size_t start = ++at;
    for (int depth = 1; at < source.size() && depth > 0; ++at) {
      const char c = source[at];
      const bool last = c == '>' && --depth == 0;
      if (c == '<') ++depth;
      if (!last && !(c == ',' && depth == 1)) continue;
      std::string arg = source.substr(start, at - start);
      arg.erase(0, arg.find_first_not_of(' '));
      const size_t close = arg.find("*/");
      if (arg.rfind("/*", 0) != 0 || close == std::string::npos || close < 3 || arg[close - 1] != '=') unnamed.push_back(name + "<" + arg);
      start = at + 1;
    }
  }
  return unnamed;
}

TEST(CandidateGolden, EveryCandidateOfTheCorpusIsUnchanged) {
  namespace fs = std::filesystem;
  const fs::path dump_dir = fs::path(AC_BINARY_DIR) / "candidate-dump";
  fs::create_directories(dump_dir);
  fs::create_directories(fs::path(AC_SOURCE_DIR) / "tests/golden/candidates");
  const auto models = testing::dump_corpus();
  ASSERT_GT(models.size(), 20u);
  std::set<std::string> families;
  std::string primitive;  // the primitive modules share one file
  for (const auto& model : models) {
    SCOPED_TRACE(model.name);
    std::ofstream(dump_dir / (model.name + ".txt")) << testing::full_text(model);
    if (model.name.starts_with("primitive-"))
      primitive += "== " + model.name + "\n" + testing::hash_lines(model);
    else
      testing::expect_golden("candidates/" + model.name + ".txt", testing::hash_lines(model));
    for (const auto& c : model.candidates) families.insert(c.family);
  }
  testing::expect_golden("candidates/primitive_modules.txt", primitive);
  // Generated sources name every template argument (codegen::template_args).
  for (const auto& model : models)
    for (const auto& c : model.candidates)
      for (const std::string& arg : unnamed_template_arguments(c.source))
        ADD_FAILURE() << model.name << " " << c.setting << " " << c.region << " " << c.id << ": unnamed template argument " << arg;
  // The corpus reaches every template family, so the pins cover every renderer.
  for (const plan::TemplateFamily* family : plan::all_families()) EXPECT_TRUE(families.count(family->name())) << family->name();
}

}  // namespace
}  // namespace agentcompile
