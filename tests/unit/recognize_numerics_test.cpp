// Raising changes no numbers: each captured model (tests/golden/recognize/torch_export/) and its
// raised module run through the reference interpreter with the same pseudo-random weights — a
// five-token prefill, then three decode steps — and give the same logits within float rounding.
// @init (Gemma's 1 + w) is run first and its results bound to the init.* parameters, as the runtime
// will; an alias (Phi-3's q/k/v rows) reads the rows of the fused weight it names.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "analysis/recognize/recognize.h"
#include "ir/interpreter.h"
#include "ir/text.h"

namespace agentcompile {
namespace {

using Logits = std::vector<std::vector<float>>;

int64_t elements(const ir::TensorType& type) {
  int64_t n = 1;
  for (const ir::Dim& d : type.shape) n *= d.value;
  return n;
}

// Deterministic values per parameter name; norm weights near 1 as trained models have them.
std::vector<float> values_for(const std::string& name, int64_t n) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(name)));
  std::normal_distribution<float> normal(0.0f, 0.15f);
  const bool norm = name.find("norm") != std::string::npos;
  std::vector<float> values(static_cast<size_t>(n));
  for (float& x : values) x = norm ? 1.0f + 0.1f * normal(rng) : normal(rng);
  return values;
}

Status load(const ir::Module& module, const std::map<std::string, std::vector<float>>& computed, const std::string& name,
            std::vector<float>& out) {
  if (auto it = computed.find(name); it != computed.end()) {
    out = it->second;
    return Status::ok();
  }
  const ir::ParamDecl* param = module.find_param(name);
  if (!param) return error(ErrorCode::kNotFound, "no parameter " + name);
  if (!param->is_alias()) {
    out = values_for(name, elements(param->type));
    return Status::ok();
  }
  const ir::ParamDecl* fused = module.find_param(param->alias_of);
  const std::vector<float> all = values_for(fused->name, elements(fused->type));
  const int64_t row = elements(fused->type) / fused->type.shape[0].value;
  const auto begin = all.begin() + param->alias_row * row;
  out.assign(begin, begin + elements(param->type));
  return Status::ok();
}

Expected<Logits> generate(const ir::Module& module) {
  std::map<std::string, std::vector<float>> computed;
  if (module.find_function("init")) {
    ir::Interpreter init(module, [&](const std::string& name, std::vector<float>& out) { return load(module, {}, name, out); });
    AC_ASSIGN_OR_RETURN(auto results, init.run("init", {}));
    size_t next = 0;
    for (const ir::ParamDecl& param : module.params)
      if (param.name.rfind("init.", 0) == 0) computed[param.name] = results.at(next++).f32;
  }
  ir::InterpreterOptions options;
  options.max_context = 32;
  options.threads = 1;
  ir::Interpreter interpreter(module, [&](const std::string& name, std::vector<float>& out) { return load(module, computed, name, out); },
                              options);
  Logits logits;
  AC_ASSIGN_OR_RETURN(auto prefill, interpreter.run("prefill", {ir::HostTensor::from_i32({5}, {3, 17, 42, 7, 99}), ir::HostTensor::scalar_i32(0)}));
  logits.push_back(prefill.at(0).f32);
  for (int32_t step = 0; step < 3; ++step) {
    AC_ASSIGN_OR_RETURN(auto decode, interpreter.run("decode", {ir::HostTensor::from_i32({1}, {11 + 5 * step}), ir::HostTensor::scalar_i32(5 + step)}));
    logits.push_back(decode.at(0).f32);
  }
  return logits;
}

ir::Module captured(const std::string& name) {
  const std::string path = std::string(AC_SOURCE_DIR) + "/tests/golden/recognize/torch_export/" + name + ".ir";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto module = ir::parse_module(text.str(), path);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return module ? std::move(module).value() : ir::Module{};
}

class RecognizeNumerics : public ::testing::TestWithParam<const char*> {};

TEST_P(RecognizeNumerics, RaisedModuleGivesTheCapturedLogits) {
  const ir::Module module = captured(GetParam());
  auto expected = generate(module);
  if (!expected) GTEST_SKIP() << "the interpreter does not run this captured module: " << expected.status().to_string();
  auto raised = analysis::recognize_module(module);
  ASSERT_TRUE(raised.has_value()) << raised.status().to_string();
  auto actual = generate(*raised);
  ASSERT_TRUE(actual.has_value()) << actual.status().to_string();
  ASSERT_EQ(actual->size(), expected->size());
  for (size_t step = 0; step < expected->size(); ++step) {
    ASSERT_EQ((*actual)[step].size(), (*expected)[step].size());
    double worst = 0;
    for (size_t i = 0; i < (*expected)[step].size(); ++i) {
      ASSERT_TRUE(std::isfinite((*actual)[step][i])) << "step " << step << " logit " << i;
      worst = std::max(worst, std::abs(static_cast<double>((*actual)[step][i]) - (*expected)[step][i]));
    }
    EXPECT_LT(worst, 1e-4) << "step " << step;  // measured: below 3e-6 for every model and step
  }
}

INSTANTIATE_TEST_SUITE_P(TorchExport, RecognizeNumerics,
                         ::testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3", "tiny-phi3", "tiny-olmo2"),
                         [](const auto& info) { return std::string(info.param).substr(5); });

}  // namespace
}  // namespace agentcompile
