// The candidates of a corpus of models, pinned (tests/unit/candidate_dump.h) under
// tests/golden/candidates/: hashes of every candidate's record and rendered source, per candidate as
// `compile` plans them on an H200, per region for the other settings. A change to what the planner
// or a renderer produces shows here by model, setting, region and candidate; the whole dump
// (records and sources) is written to <build>/candidate-dump/ to see what changed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "candidate_dump.h"
#include "golden.h"
#include "plan/template_family.h"

namespace agentcompile {
namespace {

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
  // The corpus reaches every template family, so the pins cover every renderer.
  for (const plan::TemplateFamily* family : plan::all_families()) EXPECT_TRUE(families.count(family->name())) << family->name();
}

}  // namespace
}  // namespace agentcompile
