// Every template family's renderer compiles: from the candidate corpus (tests/unit/candidate_dump.h,
// which reaches every family), one candidate of each kind (family, variant, form, fallback and launch
// count) as `compile` plans it on an H200 is compiled with NVRTC for sm_90a, and as it plans it on an
// A100 for sm_80. A family added later is covered as soon as the corpus has a region it implements.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "candidate_dump.h"
#include "codegen/nvrtc_compiler.h"
#include "nvrtc_expect.h"
#include "plan/template_family.h"

namespace agentcompile {
namespace {

TEST(FamilyNvrtc, OneCandidateOfEveryKindCompilesForSm90aAndSm80) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  const auto models = testing::dump_corpus();
  for (const auto& [setting, arch] : {std::pair<std::string, std::string>{"h200", "sm_90a"}, {"a100", "sm_80"}}) {
    using Kind = std::tuple<std::string, std::string, std::string, bool, size_t>;
    std::map<Kind, codegen::CompileJob> jobs;
    std::set<std::string> families;
    for (const auto& model : models)
      for (const auto& c : model.candidates) {
        if (c.setting != setting || c.source.empty()) continue;
        const auto record = nlohmann::json::parse(c.record);
        const Kind kind{c.family, record.at("variant"), record.at("form"), record.at("fallback"), record.at("launches").size()};
        jobs.emplace(kind, codegen::CompileJob{record.at("name"), c.source});
        families.insert(c.family);
      }
    for (const plan::TemplateFamily* family : plan::all_families()) {
      if (family->library()) continue;  // library calls may generate no kernel
      EXPECT_TRUE(families.count(family->name())) << setting << ": no " << family->name() << " candidate to compile";
    }
    std::vector<codegen::CompileJob> list;
    for (auto& [kind, job] : jobs) list.push_back(std::move(job));
    testing::expect_nvrtc_compiles(list, arch);
  }
}

}  // namespace
}  // namespace agentcompile
