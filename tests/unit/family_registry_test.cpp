// The template family registries that the build generates from the families' own files
// (cmake/template_families.cmake): every family registers under its own name with an order no other
// family has, the planner lists them by that order, and every one has a renderer, which renders
// only candidates that carry their family's record.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "codegen/render.h"
#include "codegen/renderers/renderer.h"
#include "plan/template_family.h"

namespace agentcompile {
namespace {

TEST(FamilyRegistry, EveryFamilyRegistersOnceUnderItsNameAndOrder) {
  const auto registered = plan::registered_families();
  ASSERT_FALSE(registered.empty());
  std::set<int> orders;
  std::set<std::string> names;
  for (const auto& r : registered) {
    ASSERT_NE(r.family, nullptr) << r.name;
    EXPECT_EQ(r.family->name(), r.name) << "AC_REGISTER_FAMILY(" << r.name << ", ...) registers a family named " << r.family->name();
    EXPECT_TRUE(orders.insert(r.order).second) << r.name << ": order " << r.order << " is another family's";
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
  }
  EXPECT_EQ(plan::all_families().size(), registered.size());
}

TEST(FamilyRegistry, ThePlannerListsFamiliesByOrder) {
  int previous = -1;
  for (const plan::TemplateFamily* family : plan::all_families()) {
    int order = -1;
    for (const auto& r : plan::registered_families())
      if (r.family == family) order = r.order;
    EXPECT_GT(order, previous) << family->name();
    previous = order;
    EXPECT_EQ(plan::find_family(family->name()), family);
  }
  EXPECT_EQ(plan::find_family("no_such_family"), nullptr);
}

TEST(FamilyRegistry, EveryFamilyHasARendererAndEveryRendererAFamily) {
  const auto& table = codegen::renderer_table();
  for (const plan::TemplateFamily* family : plan::all_families()) EXPECT_TRUE(table.count(family->name())) << family->name();
  for (const auto& [name, renderer] : table) EXPECT_NE(plan::find_family(name), nullptr) << "a renderer for no family: " << name;
}

// A candidate read back from metadata.json has only its serialized views: it is launched, never
// rendered, and asking for its source says so.
TEST(FamilyRegistry, ACandidateWithoutItsRecordDoesNotRender) {
  plan::Candidate c;
  c.id = "c0";
  c.family = "gemv";
  c.match.variant = "plain";
  c.params = {{"threads", 128}};
  c.launches.push_back(plan::Launch{});
  c.launches.back().kernel = "gemv_plain_f16_n8_k8_t128_r1_u1_s1";
  auto source = codegen::render_source(c);
  ASSERT_FALSE(source.has_value());
  EXPECT_NE(source.status().message().find("no configuration"), std::string::npos) << source.status().to_string();
  c.family = "no_such_family";
  EXPECT_FALSE(codegen::render_source(c).has_value());
}

}  // namespace
}  // namespace agentcompile
