// Validation inputs stay inside the domains of the ops that read them (tune/input_domains.h): index
// inputs below the axis they index (distinct for index_copy), bool inputs 0 or 1, positive arguments
// of log / sqrt, divisors away from zero, bounded arguments of exp and products near 1, for every
// seed and distribution; the draws are deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "ir/text.h"
#include "tune/input_domains.h"
#include "tune/region_cases.h"

namespace agentcompile {
namespace {

// The cases' inputs of the single region of module text `text` (function f).
std::vector<tune::RegionCase> cases_of(const std::string& text) {
  auto module = ir::parse_module(text, "domains");
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  if (!module) return {};
  const ir::Function& f = module->functions.front();
  const auto partition = analysis::form_regions(*module, f);
  EXPECT_EQ(partition.regions.size(), 1u);
  auto region = analysis::extract_region(*module, f, partition.regions.front());
  EXPECT_TRUE(region.has_value()) << region.status().to_string();
  const tune::RegionBindings bindings{1, 64, 0};
  auto layout = tune::region_layout(*region, bindings);
  EXPECT_TRUE(layout.has_value()) << layout.status().to_string();
  auto weights = tune::random_weights(*region, *layout);
  std::vector<tune::RegionCase> out;
  for (int seed = 1; seed <= 3; ++seed)
    for (auto d : {tune::Distribution::kNormal, tune::Distribution::kUniform, tune::Distribution::kHeavyTailed})
      out.push_back(tune::random_case(*region, *layout, bindings, weights, seed, d));
  return out;
}

TEST(InputDomains, IndicesStayInsideTheAxisTheyIndex) {
  for (const tune::RegionCase& c : cases_of("module m {\n  func @f(%x: f32[8, 100, 16], %i: i32[500]) -> (f32[8, 500, 16]) {\n"
                                           "    %0 = index_select(%x, %i) {axis = 1} : f32[8, 500, 16]\n    return %0\n  }\n}\n")) {
    const auto& idx = c.inputs[1].values;
    EXPECT_GE(*std::min_element(idx.begin(), idx.end()), 0.0f);
    EXPECT_LT(*std::max_element(idx.begin(), idx.end()), 100.0f);
    EXPECT_GT(std::set<float>(idx.begin(), idx.end()).size(), 50u) << "indices should cover the axis";
  }
  for (const tune::RegionCase& c : cases_of("module m {\n  func @f(%x: f32[16, 50], %i: i32[16, 7]) -> (f32[16, 7]) {\n"
                                           "    %0 = gather(%x, %i) {axis = -1} : f32[16, 7]\n    return %0\n  }\n}\n")) {
    for (float v : c.inputs[1].values) {
      EXPECT_GE(v, 0.0f);
      EXPECT_LT(v, 50.0f);
    }
  }
}

TEST(InputDomains, IndexCopyIndicesAreDistinct) {
  for (const tune::RegionCase& c :
       cases_of("module m {\n  state @buf : f16[64, 32]\n  func @f(%src: f16[40, 32], %i: i32[40]) -> (f16[64, 32]) {\n"
                "    %0 = index_copy(%src, %i) {axis = 0, state = \"buf\"} : f16[64, 32]\n    return %0\n  }\n}\n")) {
    const auto& idx = c.inputs[1].values;
    EXPECT_EQ(std::set<float>(idx.begin(), idx.end()).size(), idx.size());
    for (float v : idx) {
      EXPECT_GE(v, 0.0f);
      EXPECT_LT(v, 64.0f);
    }
    ASSERT_EQ(c.states.size(), 1u);
  }
}

TEST(InputDomains, MathOpsGetArgumentsInTheirDomain) {
  const std::string text =
      "module m {\n  func @f(%a: f32[64, 300], %b: f16[64, 300], %c: f32[64, 300], %d: bf16[64, 300], %m: bool[64, 300], %e: f32[64, 300])"
      " -> (f32[64, 300], f16[64, 300], f32[64, 300], bf16[64, 300], f32[64, 300]) {\n"
      "    %0 = log(%a) : f32[64, 300]\n    %1 = rsqrt(%b) : f16[64, 300]\n    %2 = div(%a, %c) : f32[64, 300]\n"
      "    %3 = exp(%d) : bf16[64, 300]\n    %f = cast(%m) {dtype = \"f32\"} : f32[64, 300]\n    %p = mul(%e, %f) : f32[64, 300]\n"
      "    %4 = cumprod(%p) {axis = 1} : f32[64, 300]\n    %5 = cumprod(%e) {axis = 1} : f32[64, 300]\n    %6 = add(%4, %5) : f32[64, 300]\n"
      "    return %0, %1, %2, %3, %6\n  }\n}\n";
  auto module = ir::parse_module(text, "domains");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const auto domains = tune::input_domains(module->functions.front());
  ASSERT_EQ(domains.size(), 6u);
  EXPECT_EQ(domains[0].domain, tune::Domain::kPositive);  // log's, also the dividend
  EXPECT_EQ(domains[1].domain, tune::Domain::kPositive);
  EXPECT_EQ(domains[2].domain, tune::Domain::kNonzero);
  EXPECT_EQ(domains[3].domain, tune::Domain::kBounded);
  EXPECT_EQ(domains[4].domain, tune::Domain::kAny);
  EXPECT_EQ(domains[5].domain, tune::Domain::kProduct);  // read by cumprod directly (and by mul)
}

// A mean of squares comes in as an input of the region that adds epsilon and takes the square root:
// the input must be drawn positive though sqrt reads it through the add.
TEST(InputDomains, SeenThroughOpsThatKeepTheSign) {
  const std::string text =
      "module m {\n  func @f(%m: f32[4, 1, 32], %x: f32[4, 64, 32], %s: f32[4, 64, 32]) -> (f32[4, 64, 32], f32[4, 64, 32]) {\n"
      "    %eps = constant {dtype = \"f32\", shape = [], value = 1e-5} : f32[]\n    %e = add(%m, %eps) : f32[4, 1, 32]\n"
      "    %r = sqrt(%e) : f32[4, 1, 32]\n    %0 = div(%x, %r) : f32[4, 64, 32]\n"
      "    %neg = constant {dtype = \"f32\", shape = [], value = -1.0} : f32[]\n    %t = add(%s, %neg) : f32[4, 64, 32]\n"
      "    %1 = log(%t) : f32[4, 64, 32]\n    return %0, %1\n  }\n}\n";
  auto module = ir::parse_module(text, "domains");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const auto domains = tune::input_domains(module->functions.front());
  ASSERT_EQ(domains.size(), 3u);
  EXPECT_EQ(domains[0].domain, tune::Domain::kPositive);
  EXPECT_EQ(domains[1].domain, tune::Domain::kAny);
  EXPECT_EQ(domains[2].domain, tune::Domain::kAny) << "adding -1 does not keep a positive value positive";
}

TEST(InputDomains, DrawsRespectTheDomainsAndRepeat) {
  const std::string text =
      "module m {\n  func @f(%a: f32[64, 300], %c: f32[64, 300], %d: f16[64, 300], %m: bool[64, 300], %e: f32[64, 300])"
      " -> (f32[64, 300]) {\n"
      "    %0 = log(%a) : f32[64, 300]\n    %1 = div(%0, %c) : f32[64, 300]\n    %2 = exp(%d) : f16[64, 300]\n"
      "    %3 = cast(%2) {dtype = \"f32\"} : f32[64, 300]\n    %4 = add(%1, %3) : f32[64, 300]\n"
      "    %f = cast(%m) {dtype = \"f32\"} : f32[64, 300]\n    %5 = mul(%4, %f) : f32[64, 300]\n"
      "    %6 = mul(%5, %e) : f32[64, 300]\n    %7 = cumprod(%e) {axis = 1} : f32[64, 300]\n    %8 = add(%6, %7) : f32[64, 300]\n"
      "    return %8\n  }\n}\n";
  const auto cases = cases_of(text);
  const auto again = cases_of(text);
  ASSERT_EQ(cases.size(), again.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const tune::RegionCase& c = cases[i];
    for (size_t k = 0; k < c.inputs.size(); ++k) EXPECT_EQ(c.inputs[k].bytes, again[i].inputs[k].bytes) << "draws must repeat";
    for (float v : c.inputs[0].values) EXPECT_GT(v, 0.0f);
    for (float v : c.inputs[1].values) EXPECT_GE(std::fabs(v), 0.5f);
    for (float v : c.inputs[2].values) EXPECT_LE(std::fabs(v), 8.0f);
    std::set<float> bools(c.inputs[3].values.begin(), c.inputs[3].values.end());
    EXPECT_EQ(bools, (std::set<float>{0.0f, 1.0f}));
    for (uint8_t byte : c.inputs[3].bytes) EXPECT_LE(byte, 1);
    for (float v : c.inputs[4].values) {
      EXPECT_GE(v, std::exp(-0.02f));
      EXPECT_LE(v, std::exp(0.02f));
    }
  }
}

// A projection that reads rows of a fused weight (an alias: Phi-3's qkv_proj) is a region with a weight of its
// own: extraction drops the alias, so admission can draw its values and the interpreter computes the reference
// without the fused source, which the region does not hold.
TEST(InputDomains, AliasedRowsAreARegionsOwnWeight) {
  const std::string text =
      "module m {\n  param @qkv.weight : f16[96, 64]\n  param @qkv.weight.1 : f16[16, 64] alias @qkv.weight row 64\n"
      "  func @f(%x: f16[T, 64]) -> (f16[T, 16]) {\n    %0 = weight {name = \"qkv.weight.1\"} : f16[16, 64]\n"
      "    %1 = linear(%x, %0) : f16[T, 16]\n    return %1\n  }\n}\n";
  auto module = ir::parse_module(text, "alias");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const ir::Function& f = module->functions.front();
  const auto partition = analysis::form_regions(*module, f);
  ASSERT_EQ(partition.regions.size(), 1u);
  auto region = analysis::extract_region(*module, f, partition.regions.front());
  ASSERT_TRUE(region.has_value()) << region.status().to_string();
  ASSERT_EQ(region->params.size(), 1u);
  EXPECT_EQ(region->params[0].name, "qkv.weight.1");
  EXPECT_FALSE(region->params[0].is_alias());
  auto cases = tune::build_region_cases(*region, tune::RegionBindings{8, 64, 0}, 1, {tune::Distribution::kNormal});
  ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
  ASSERT_EQ(cases->size(), 1u);
  ASSERT_EQ(cases->front().expected_outputs.size(), 1u);
  EXPECT_EQ(cases->front().expected_outputs[0].values.size(), 8u * 16u);
}

// Timing data of a tensor larger than the period is drawn as one period (repeated by the upload):
// domains still hold in it, and smaller tensors are drawn whole as before.
TEST(InputDomains, TimingDataOfAHugeTensorIsOnePeriodInsideItsDomain) {
  auto module = ir::parse_module("module m {\n  func @f(%x: f32[T, 4096]) -> (f32[T, 4096]) {\n"
                                 "    %0 = log(%x) : f32[T, 4096]\n    return %0\n  }\n}\n", "huge");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const ir::Function& f = module->functions.front();
  auto region = analysis::extract_region(*module, f, analysis::form_regions(*module, f).regions.front());
  ASSERT_TRUE(region.has_value()) << region.status().to_string();
  const int64_t period = 1 << 12;
  for (int64_t tokens : {1, 64}) {
    const tune::RegionBindings size{tokens, 64, 0};
    auto layout = tune::region_layout(*region, size);
    ASSERT_TRUE(layout.has_value());
    const tune::RegionCase c = tune::random_case(*region, *layout, size, {}, 1, tune::Distribution::kNormal, period);
    const tune::TestTensor& x = c.inputs[0];
    EXPECT_EQ(x.elements(), tokens * 4096);
    EXPECT_EQ(x.periodic, tokens * 4096 > period);
    EXPECT_EQ(x.bytes.size(), static_cast<size_t>(std::min<int64_t>(tokens * 4096, period)) * 4);
    EXPECT_EQ(x.values.empty(), x.periodic);
    for (float v : tune::decode_values(ir::DType::kF32, x.bytes)) EXPECT_GT(v, 0.0f) << "log's argument must stay positive";
  }
}

// Admission's cases of a region whose data is gigabytes per case are capped by the budget (at least
// one); a region of ordinary size keeps every seed x distribution.
TEST(InputDomains, CasesOfAHugeRegionFitTheBudget) {
  auto layout_of = [](int64_t elements) {
    tune::RegionLayout layout;
    layout.inputs = {ir::TensorType{ir::DType::kF32, {ir::Dim::of(elements)}}};
    layout.outputs = layout.inputs;
    layout.output_state = {-1};
    return layout;
  };
  EXPECT_EQ(tune::case_count(layout_of(4096), 3, 2), 6);
  EXPECT_EQ(tune::case_count(layout_of(int64_t{1} << 28), 3, 2), 2);  // 2 GiB per case of a 4 GiB budget
  EXPECT_EQ(tune::case_count(layout_of(int64_t{1} << 30), 3, 2), 1);  // L1 33 BatchNorm: 8 GiB per case
  EXPECT_EQ(tune::case_count(layout_of(int64_t{1} << 31), 3, 2), 1);
}

}  // namespace
}  // namespace agentcompile
