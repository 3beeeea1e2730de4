// The shared reference without a GPU. Admission builds a region's cases (random data and the
// interpreter's outputs) once and checks every candidate of the region against them
// (tune/admission_steps.h); the host half of that check is check_case_outputs. Here, for every
// unique decode region of a tiny Qwen3, one set of cases is built and shared by a correct "candidate"
// (the reference's own outputs rounded to the output dtype) and planted wrong ones: one element far
// off, every element off by four tolerances, a NaN, a short read, and a candidate wrong only in the
// last case. The correct one passes every case; each wrong one is rejected, the last one naming the
// case it fails. The cases are deterministic, so a worker that rebuilds them after a fault checks
// against exactly the same outputs, and their cost is accounted as case data and reference time.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "model_fixtures.h"
#include "tune/admission_steps.h"
#include "tune/region_cases.h"

namespace agentcompile::tune {
namespace {


// The first plain (not a state's) float output, or -1.
int planted_output(const RegionLayout& layout) {
  for (size_t o = 0; o < layout.outputs.size(); ++o)
    if (layout.output_state[o] < 0 && ir::is_float(layout.outputs[o].dtype)) return static_cast<int>(o);
  return -1;
}

// Plants an error into the values of output `o` of case `case_index`.
using Plant = std::function<void(size_t case_index, std::vector<float>& values)>;

// A host "candidate": the reference's outputs and states as the GPU would hand them back (rounded
// to their dtypes), with `plant` applied to output `o`, checked case by case as the worker checks
// them. Returns why it is rejected ("" when it passes every case); `short_read` halves output o.
std::string check_candidate(const RegionLayout& layout, const std::vector<RegionCase>& cases, int o, const Plant& plant,
                            bool short_read = false) {
  double max_abs = 0, max_rel = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const RegionCase& c = cases[k];
    std::vector<std::vector<uint8_t>> outputs(layout.outputs.size()), states(layout.states.size());
    for (size_t i = 0; i < layout.outputs.size(); ++i) {
      if (layout.output_state[i] >= 0) continue;
      const TestTensor& expected = c.expected_outputs[i];
      std::vector<float> values = expected.values;
      if (static_cast<int>(i) == o && plant) plant(k, values);
      outputs[i] = tensor_from_values(expected.dtype, expected.shape, std::move(values)).bytes;
      if (static_cast<int>(i) == o && short_read) outputs[i].resize(outputs[i].size() / 2);
    }
    for (size_t s = 0; s < layout.states.size(); ++s)
      states[s] = tensor_from_values(c.expected_states[s].dtype, c.expected_states[s].shape, c.expected_states[s].values).bytes;
    const std::string why = check_case_outputs(layout, c, outputs, states, max_abs, max_rel);
    if (!why.empty()) return why;
  }
  return "";
}

TEST(SharedReference, OneSetOfCasesCatchesEveryPlantedWrongCandidate) {
  const ir::Module module = fixtures::tiny_model("tiny-qwen3.json");
  const ir::Function& decode = *module.find_function("decode");
  const auto partition = analysis::form_regions(module, decode);
  const auto unique = analysis::unique_regions(module, decode, partition, {1, 64});
  const RegionBindings bindings{1, 64, 20};
  int checked = 0;
  for (const auto& u : unique) {
    const auto& region = partition.regions[static_cast<size_t>(u.sites.front())];
    auto region_module = analysis::extract_region(module, decode, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto layout = region_layout(*region_module, bindings);
    ASSERT_TRUE(layout.has_value()) << layout.status().to_string();
    const int o = planted_output(*layout);
    if (o < 0) continue;
    SCOPED_TRACE("r" + std::to_string(u.id) + " " + analysis::category_name(u.summary.category));

    AdmissionTimes times;
    auto cases = build_region_cases(*region_module, bindings, 2, {Distribution::kNormal, Distribution::kHeavyTailed}, &times);
    ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
    ASSERT_EQ(cases->size(), 4u);
    EXPECT_GT(times.reference_s, 0.0);
    EXPECT_GT(times.case_data_s, 0.0);
    const ir::DType dtype = layout->outputs[static_cast<size_t>(o)].dtype;
    const double tolerance = std::max(tolerance_for(dtype), tolerance_for(layout->precision));

    EXPECT_EQ(check_candidate(*layout, *cases, o, nullptr), "") << "the reference's own outputs must pass";
    // Far off at one element, near the middle.
    std::string why = check_candidate(*layout, *cases, o, [](size_t, std::vector<float>& v) { v[v.size() / 2] += 1000.0f; });
    EXPECT_NE(why.find("wrong numbers"), std::string::npos) << why;
    // Every element four tolerances off: the check is relative to the reference's largest value.
    why = check_candidate(*layout, *cases, o, [&](size_t, std::vector<float>& v) {
      for (float& x : v) x *= static_cast<float>(1 + 4 * tolerance);
    });
    EXPECT_NE(why.find("wrong numbers"), std::string::npos) << why;
    // One element never written (poisoned NaN left in place).
    why = check_candidate(*layout, *cases, o, [](size_t, std::vector<float>& v) { v.back() = std::numeric_limits<float>::quiet_NaN(); });
    EXPECT_NE(why.find("NaN"), std::string::npos) << why;
    // Half the output read back.
    why = check_candidate(*layout, *cases, o, nullptr, /*short_read=*/true);
    EXPECT_NE(why.find("read back"), std::string::npos) << why;
    // Wrong only in the last case (a kernel wrong for some data only): the shared cases are all checked.
    why = check_candidate(*layout, *cases, o, [&](size_t k, std::vector<float>& v) {
      if (k + 1 == cases->size()) v.front() += 1000.0f;
    });
    EXPECT_NE(why.find(cases->back().label), std::string::npos) << why;

    // Built again (a worker that replaced a faulted one): exactly the same reference.
    auto again = build_region_cases(*region_module, bindings, 2, {Distribution::kNormal, Distribution::kHeavyTailed});
    ASSERT_TRUE(again.has_value());
    for (size_t k = 0; k < cases->size(); ++k)
      for (size_t i = 0; i < (*cases)[k].expected_outputs.size(); ++i)
        EXPECT_EQ((*cases)[k].expected_outputs[i].values, (*again)[k].expected_outputs[i].values) << "case " << k << " output " << i;
    ++checked;
  }
  EXPECT_GE(checked, 3) << "too few decode regions with a float output were checked";
}

}  // namespace
}  // namespace agentcompile::tune
