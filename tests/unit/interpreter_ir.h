// Helpers for interpreter tests written as IR text: parse and verify a module, run its function @f,
// build host tensors, compare results.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::ir::ir_test {

inline HostTensor f32(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor tensor;
  tensor.shape = std::move(shape);
  tensor.f32 = std::move(values);
  return tensor;
}
inline HostTensor i32(std::vector<int64_t> shape, std::vector<int32_t> values) {
  return HostTensor::from_i32(std::move(shape), std::move(values));
}
inline HostTensor boolean(std::vector<int64_t> shape, std::vector<int32_t> values) {
  return HostTensor::from_bool(std::move(shape), std::move(values));
}

// Parses and verifies `text`: a test that writes invalid IR fails here, not inside the interpreter.
inline Module parse_ok(const std::string& text) {
  auto module = parse_module(text);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  if (!module) return Module{};
  const Status verified = verify_module(*module);
  EXPECT_TRUE(verified.is_ok()) << verified.to_string();
  return *module;
}

// Runs @f of `text` with a fresh interpreter (max_context 8 and 2 threads unless told otherwise).
inline Expected<std::vector<HostTensor>> run_ir(const std::string& text, const std::vector<HostTensor>& args,
                                                WeightLoader loader = {}, InterpreterOptions options = {8, 2}) {
  Interpreter interpreter(parse_ok(text), std::move(loader), options);
  return interpreter.run("f", args);
}

// The results of @f; an error fails the test and gives an empty list.
inline std::vector<HostTensor> run_ok(const std::string& text, const std::vector<HostTensor>& args,
                                      WeightLoader loader = {}, InterpreterOptions options = {8, 2}) {
  auto out = run_ir(text, args, std::move(loader), options);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  return out ? *out : std::vector<HostTensor>{};
}

// The error @f gives; a success fails the test.
inline std::string run_error(const std::string& text, const std::vector<HostTensor>& args, WeightLoader loader = {},
                             InterpreterOptions options = {8, 2}) {
  auto out = run_ir(text, args, std::move(loader), options);
  EXPECT_FALSE(out.has_value()) << "expected an error";
  return out ? std::string() : out.status().message();
}

// A module "m" with declarations `decls` and one function @f.
inline std::string module_text(const std::string& signature, const std::string& body, const std::string& decls = "") {
  return "module m {\n" + decls + "func @f" + signature + " {\n" + body + "\n}\n}\n";
}

// |actual - expected| <= tol * max(1, max |expected|), element by element; NaN must meet NaN.
inline void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  double scale = 1.0;
  for (double e : expected)
    if (std::isfinite(e)) scale = std::max(scale, std::abs(e));
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "at element " << i << ": " << actual[i];
      continue;
    }
    ASSERT_NEAR(actual[i], expected[i], tol * scale) << "at element " << i;
  }
}

// Deterministic values in [-scale, scale): splitmix64 of (seed, index).
inline std::vector<float> random_values(uint64_t seed, size_t count, float scale = 1.0f) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    values[i] = scale * static_cast<float>(static_cast<double>(z >> 11) / 4503599627370496.0 - 1.0);
  }
  return values;
}

}  // namespace agentcompile::ir::ir_test
