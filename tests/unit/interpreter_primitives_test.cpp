// The reference interpreter on the primitive ops of captured graphs, each written as IR text with
// small hand-checkable values: sources (random_uniform's Philox against its published test vectors), pointwise math (NaN rules, half-to-even rounding, i32
// wrapping), comparisons and bool values, casts, layer_norm, layout and gathers (with their bounds
// errors), reductions, arg-extremes and scans. Attention, state writes, aliases and the primitive
// decompositions of semantic ops are in interpreter_composites_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "interpreter_ir.h"
#include "kernels/random.cuh"

namespace agentcompile::ir {
namespace {

using namespace ir_test;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
constexpr int32_t kMin = std::numeric_limits<int32_t>::min();

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Floats equal element by element, NaN equal to NaN.
void expect_same(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(actual[i])) << "at element " << i << ": " << actual[i];
    else
      EXPECT_EQ(actual[i], expected[i]) << "at element " << i;
  }
}

TEST(InterpreterSources, ConstantSplatAndDense) {
  const auto out = run_ok(module_text("() -> (f32[2, 2], i32[3], bool[2], bool[3], f32[])", R"(
    %a = constant {dtype = "f32", shape = [2, 2], value = 1.5} : f32[2, 2]
    %b = constant {dtype = "i32", shape = [3], values = [1.0, -2.0, 3.0]} : i32[3]
    %c = constant {dtype = "bool", shape = [2], value = 1} : bool[2]
    %d = constant {dtype = "bool", shape = [3], values = [0.0, 1.0, 0.0]} : bool[3]
    %e = constant {dtype = "f32", shape = [], value = -inf} : f32[]
    return %a, %b, %c, %d, %e)"),
                          {});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f}));
  EXPECT_EQ(out[1].dtype, DType::kI32);
  EXPECT_EQ(out[1].i32, (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(out[2].dtype, DType::kBool);
  EXPECT_EQ(out[2].i32, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(out[3].i32, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_EQ(out[4].shape, std::vector<int64_t>{});
  EXPECT_EQ(out[4].f32, std::vector<float>{-std::numeric_limits<float>::infinity()});
}

TEST(InterpreterSources, IntegerConstantsMustBeWholeNumbers) {
  for (const char* attrs : {R"(dtype = "i32", shape = [2], value = 1.5)", R"(dtype = "i32", shape = [2], value = nan)",
                            R"(dtype = "i32", shape = [1], values = [3e9])", R"(dtype = "bool", shape = [2], value = 2)"}) {
    const std::string type = contains(attrs, "bool") ? "bool" : "i32";
    const std::string size = contains(attrs, "[1]") ? "1" : "2";
    const std::string message = run_error(module_text("() -> (" + type + "[" + size + "])",
                                                      "%k = constant {" + std::string(attrs) + "} : " + type + "[" +
                                                          size + "]\nreturn %k"),
                                          {});
    EXPECT_TRUE(contains(message, "node %k (constant)")) << message;
    EXPECT_TRUE(contains(message, "element 0")) << message;
  }
}

TEST(InterpreterSources, ArangeOfStaticTAndLLengths) {
  const auto out = run_ok(module_text("(%x: f32[T]) -> (i32[T], f32[L], f32[3])", R"(
    %a = arange {dtype = "i32", start = 2, step = 3, length = [T]} : i32[T]
    %b = arange {dtype = "f32", start = 0.5, step = 0.25, length = [L]} : f32[L]
    %c = arange {dtype = "f32", start = 1.0, step = -0.5, length = [3]} : f32[3]
    return %a, %b, %c)"),
                          {f32({4}, {0, 0, 0, 0})});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].i32, (std::vector<int32_t>{2, 5, 8, 11}));  // T = 4
  EXPECT_EQ(out[1].f32, (std::vector<float>{0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2, 2.25f}));  // L = max_context 8
  EXPECT_EQ(out[2].f32, (std::vector<float>{1, 0.5f, 0}));

  std::string message = run_error(module_text("() -> (i32[2])", R"(
    %a = arange {dtype = "i32", start = 0.5, step = 1, length = [2]} : i32[2]
    return %a)"),
                                  {});
  EXPECT_TRUE(contains(message, "node %a (arange)") && contains(message, "start 0.5")) << message;
  message = run_error(module_text("() -> (i32[3])", R"(
    %a = arange {dtype = "i32", start = 2147483640, step = 5, length = [3]} : i32[3]
    return %a)"),
                      {});
  EXPECT_TRUE(contains(message, "element 2") && contains(message, "overflows i32")) << message;
}

// Philox4x32-10's known-answer vectors (Random123's kat_vectors), which python/agentcompile/random_ops.py
// checks too: the kernels, the interpreter and the eager reference share one generator.
TEST(InterpreterSources, PhiloxMatchesItsPublishedVectors) {
  const ac::Philox4x32 zero = ac::philox4x32_10(ac::Philox4x32{{0u, 0u, 0u, 0u}}, 0u, 0u);
  EXPECT_EQ(std::vector<unsigned>(zero.v, zero.v + 4), (std::vector<unsigned>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  const ac::Philox4x32 ones = ac::philox4x32_10(ac::Philox4x32{{~0u, ~0u, ~0u, ~0u}}, ~0u, ~0u);
  EXPECT_EQ(std::vector<unsigned>(ones.v, ones.v + 4), (std::vector<unsigned>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  const ac::Philox4x32 pi = ac::philox4x32_10(ac::Philox4x32{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(std::vector<unsigned>(pi.v, pi.v + 4), (std::vector<unsigned>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
  // Element i: word i % 4 of block i / 4, its top 24 bits over 2^24.
  EXPECT_EQ(ac::random_uniform(0, 0), static_cast<float>(0x6627e8d5u >> 8) / 16777216.0f);
  EXPECT_EQ(ac::random_uniform(0, 3), static_cast<float>(0x9b00dbd8u >> 8) / 16777216.0f);
}

// Element i depends on (seed, i) alone: a row's values do not change with T, a seed gives the same
// values every call and another seed others; uniform in [0, 1).
TEST(InterpreterSources, RandomUniformIsAFunctionOfSeedAndIndex) {
  const std::string text = module_text("(%x: f32[T]) -> (f32[T, 3], f32[T, 3], f32[4096])", R"(
    %a = random_uniform {seed = 7, shape = [T, 3]} : f32[T, 3]
    %b = random_uniform {seed = 8, shape = [T, 3]} : f32[T, 3]
    %c = random_uniform {seed = 9007199254740991, shape = [4096]} : f32[4096]
    return %a, %b, %c)");
  const auto four = run_ok(text, {f32({4}, {0, 0, 0, 0})});
  const auto two = run_ok(text, {f32({2}, {0, 0})});
  ASSERT_EQ(four.size(), 3u);
  ASSERT_EQ(two.size(), 3u);
  EXPECT_EQ(four[0].shape, (std::vector<int64_t>{4, 3}));
  for (size_t i = 0; i < four[0].f32.size(); ++i) {
    EXPECT_EQ(four[0].f32[i], ac::random_uniform(7, i)) << i;
    EXPECT_NE(four[0].f32[i], four[1].f32[i]) << i;
  }
  EXPECT_EQ(std::vector<float>(four[0].f32.begin(), four[0].f32.begin() + 6), two[0].f32);
  EXPECT_EQ(run_ok(text, {f32({4}, {0, 0, 0, 0})})[0].f32, four[0].f32);
  double sum = 0;
  int below = 0;
  for (float u : four[2].f32) {
    ASSERT_TRUE(u >= 0.0f && u < 1.0f) << u;
    sum += u;
    below += u < 0.3f;
  }
  EXPECT_NEAR(sum / 4096, 0.5, 0.02);             // the standard error is 0.0045
  EXPECT_NEAR(below / 4096.0, 0.3, 0.03);         // 0.0072
}

TEST(InterpreterSources, RandomUniformNeedsASeedInRange) {
  for (const char* attrs : {"seed = -1, shape = [2]", "seed = 9007199254740992, shape = [2]", "shape = [2]"}) {
    auto module = parse_module(module_text("() -> (f32[2])", std::string("    %a = random_uniform {") + attrs + R"(} : f32[2]
    return %a)"));
    const Status status = module ? verify_module(*module) : module.status();
    EXPECT_FALSE(status.is_ok()) << attrs;
    EXPECT_TRUE(contains(status.message(), "seed")) << status.message();
  }
}

TEST(InterpreterPointwise, PowMaximumMinimumBroadcastAndPropagateNaN) {
  const auto out = run_ok(module_text("(%x: f32[2, 3], %y: f32[3]) -> (f32[2, 3], f32[2, 3], f32[2, 3], f32[2, 3])", R"(
    %p = pow(%x, %y) : f32[2, 3]
    %hi = maximum(%x, %y) : f32[2, 3]
    %lo = minimum(%x, %y) : f32[2, 3]
    %hi2 = maximum(%y, %x) : f32[2, 3]
    return %p, %hi, %lo, %hi2)"),
                          {f32({2, 3}, {2, 4, -8, kNaN, 1, 3}), f32({3}, {3, 0.5f, 2})});
  ASSERT_EQ(out.size(), 4u);
  expect_same(out[0].f32, {8, 2, 64, kNaN, 1, 9});
  expect_same(out[1].f32, {3, 4, 2, kNaN, 1, 3});
  expect_same(out[2].f32, {2, 0.5f, -8, kNaN, 0.5f, 2});
  expect_same(out[3].f32, {3, 4, 2, kNaN, 1, 3});
}

TEST(InterpreterPointwise, ComparisonsAndLogicGiveBool) {
  const auto out = run_ok(
      module_text("(%x: f32[4], %y: f32[4], %i: i32[2, 1], %j: i32[3], %b: bool[3], %c: bool[3]) -> (bool[4], bool[4], "
                  "bool[4], bool[4], bool[4], bool[4], bool[2, 3], bool[2, 3], bool[3], bool[3], bool[3], bool[3])",
                  R"(
    %eq = eq(%x, %y) : bool[4]
    %ne = ne(%x, %y) : bool[4]
    %lt = lt(%x, %y) : bool[4]
    %le = le(%x, %y) : bool[4]
    %gt = gt(%x, %y) : bool[4]
    %ge = ge(%x, %y) : bool[4]
    %ilt = lt(%i, %j) : bool[2, 3]
    %ieq = eq(%i, %j) : bool[2, 3]
    %beq = eq(%b, %c) : bool[3]
    %and = logical_and(%b, %c) : bool[3]
    %or = logical_or(%b, %c) : bool[3]
    %not = logical_not(%b) : bool[3]
    return %eq, %ne, %lt, %le, %gt, %ge, %ilt, %ieq, %beq, %and, %or, %not)"),
      {f32({4}, {1, 2, kNaN, 3}), f32({4}, {1, 3, kNaN, 2}), i32({2, 1}, {1, 2}), i32({3}, {0, 1, 2}),
       boolean({3}, {0, 1, 1}), boolean({3}, {0, 0, 1})});
  ASSERT_EQ(out.size(), 12u);
  for (const HostTensor& result : out) EXPECT_EQ(result.dtype, DType::kBool);
  using V = std::vector<int32_t>;
  EXPECT_EQ(out[0].i32, (V{1, 0, 0, 0}));  // NaN compares false ...
  EXPECT_EQ(out[1].i32, (V{0, 1, 1, 1}));  // ... except ne
  EXPECT_EQ(out[2].i32, (V{0, 1, 0, 0}));
  EXPECT_EQ(out[3].i32, (V{1, 1, 0, 0}));
  EXPECT_EQ(out[4].i32, (V{0, 0, 0, 1}));
  EXPECT_EQ(out[5].i32, (V{1, 0, 0, 1}));
  EXPECT_EQ(out[6].i32, (V{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(out[7].i32, (V{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(out[8].i32, (V{1, 0, 1}));
  EXPECT_EQ(out[9].i32, (V{0, 0, 1}));
  EXPECT_EQ(out[10].i32, (V{0, 1, 1}));
  EXPECT_EQ(out[11].i32, (V{1, 0, 0}));
}

TEST(InterpreterPointwise, WhereBroadcastsThreeWays) {
  const auto out = run_ok(
      module_text("(%c: bool[2, 1], %a: f32[3], %b: f32[], %d: bool[3], %ia: i32[2, 1], %ib: i32[3]) -> (f32[2, 3], "
                  "i32[2, 3])",
                  R"(
    %w = where(%c, %a, %b) : f32[2, 3]
    %wi = where(%d, %ia, %ib) : i32[2, 3]
    return %w, %wi)"),
      {boolean({2, 1}, {1, 0}), f32({3}, {1, 2, 3}), f32({}, {9}), boolean({3}, {1, 0, 1}), i32({2, 1}, {10, 20}),
       i32({3}, {7, 8, 9})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{1, 2, 3, 9, 9, 9}));
  EXPECT_EQ(out[1].i32, (std::vector<int32_t>{10, 8, 10, 20, 8, 20}));
}

TEST(InterpreterPointwise, IntegerArithmeticWrapsAndTruncates) {
  const std::string text = module_text("(%a: i32[4], %b: i32[4]) -> (i32[4], i32[4], i32[4], i32[4], i32[4], i32[4], i32[4])", R"(
    %add = add(%a, %b) : i32[4]
    %sub = sub(%a, %b) : i32[4]
    %mul = mul(%a, %b) : i32[4]
    %div = div(%a, %b) : i32[4]
    %neg = neg(%a) : i32[4]
    %abs = abs(%a) : i32[4]
    %sign = sign(%a) : i32[4]
    return %add, %sub, %mul, %div, %neg, %abs, %sign)");
  const auto out = run_ok(text, {i32({4}, {kMax, -7, 7, kMin}), i32({4}, {1, 2, -2, -1})});
  ASSERT_EQ(out.size(), 7u);
  using V = std::vector<int32_t>;
  EXPECT_EQ(out[0].i32, (V{kMin, -5, 5, kMax}));
  EXPECT_EQ(out[1].i32, (V{kMax - 1, -9, 9, kMin + 1}));
  EXPECT_EQ(out[2].i32, (V{kMax, -14, -14, kMin}));
  EXPECT_EQ(out[3].i32, (V{kMax, -3, -3, kMin}));  // toward zero; INT32_MIN / -1 wraps
  EXPECT_EQ(out[4].i32, (V{-kMax, 7, -7, kMin}));
  EXPECT_EQ(out[5].i32, (V{kMax, 7, 7, kMin}));
  EXPECT_EQ(out[6].i32, (V{1, -1, 1, -1}));
  const std::string message = run_error(text, {i32({4}, {1, 2, 3, 4}), i32({4}, {1, 0, 1, 1})});
  EXPECT_TRUE(contains(message, "node %div (div)") && contains(message, "integer division by zero")) << message;
}

TEST(InterpreterPointwise, UnaryMathMatchesDoubleFormulas) {
  struct Case {
    const char* op;
    std::function<double(double)> f;
    std::vector<float> x;
  };
  const std::vector<float> positive = {0.25f, 0.5f, 1, 2, 7.5f};
  const std::vector<float> any = {-3, -0.5f, 0, 0.75f, 2.5f};
  const std::vector<Case> cases = {
      {"log", [](double v) { return std::log(v); }, positive},
      {"log1p", [](double v) { return std::log1p(v); }, positive},
      {"expm1", [](double v) { return std::expm1(v); }, any},
      {"sqrt", [](double v) { return std::sqrt(v); }, positive},
      {"rsqrt", [](double v) { return 1 / std::sqrt(v); }, positive},
      {"abs", [](double v) { return std::abs(v); }, any},
      {"tanh", [](double v) { return std::tanh(v); }, any},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }, any},
      {"relu", [](double v) { return v > 0 ? v : 0; }, any},
      {"erf", [](double v) { return std::erf(v); }, any},
      {"sin", [](double v) { return std::sin(v); }, any},
      {"cos", [](double v) { return std::cos(v); }, any},
      {"reciprocal", [](double v) { return 1 / v; }, positive},
      {"floor", [](double v) { return std::floor(v); }, any},
      {"ceil", [](double v) { return std::ceil(v); }, any},
      {"exp", [](double v) { return std::exp(v); }, any},
      {"neg", [](double v) { return -v; }, any},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, any},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const auto out = run_ok(module_text("(%x: f32[5]) -> (f32[5])", "%y = " + std::string(c.op) + "(%x) : f32[5]\nreturn %y"),
                            {f32({5}, c.x)});
    ASSERT_EQ(out.size(), 1u);
    for (size_t i = 0; i < c.x.size(); ++i) {
      const double expected = c.f(c.x[i]);
      EXPECT_NEAR(out[0].f32[i], expected, 2e-7 * std::max(1.0, std::abs(expected))) << "x = " << c.x[i];
    }
  }
}

TEST(InterpreterPointwise, RoundSignReluAndNaN) {
  const auto out = run_ok(module_text("(%x: f32[10], %n: f32[4]) -> (f32[10], f32[4], f32[4], f32[4])", R"(
    %r = round(%x) : f32[10]
    %s = sign(%n) : f32[4]
    %relu = relu(%n) : f32[4]
    %sig = sigmoid(%n) : f32[4]
    return %r, %s, %relu, %sig)"),
                          {f32({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4f, 2.6f, -2.6f, 8388609}),
                           f32({4}, {-2, -0.0f, kNaN, 3})});
  ASSERT_EQ(out.size(), 4u);
  expect_same(out[0].f32, {0, 2, 2, -0.0f, -2, -2, 2, 3, -3, 8388609});  // half to even
  expect_same(out[1].f32, {-1, 0, 0, 1});                                // sign(NaN) = 0, as torch
  expect_same(out[2].f32, {0, 0, kNaN, 3});
  EXPECT_TRUE(std::isnan(out[3].f32[2]));
}

TEST(InterpreterPointwise, GeluLeakyReluClamp) {
  const auto out = run_ok(module_text("(%x: f32[4]) -> (f32[4], f32[4], f32[4], f32[4], f32[4], f32[4])", R"(
    %erf = gelu(%x) {approximate = "none"} : f32[4]
    %tanh = gelu(%x) {approximate = "tanh"} : f32[4]
    %leaky = leaky_relu(%x) {slope = 0.1} : f32[4]
    %lo = clamp(%x) {lo = -1.0} : f32[4]
    %hi = clamp(%x) {hi = 0.5} : f32[4]
    %both = clamp(%x) {lo = -1.0, hi = 0.5} : f32[4]
    return %erf, %tanh, %leaky, %lo, %hi, %both)"),
                          {f32({4}, {1, -1, -2, kNaN})});
  ASSERT_EQ(out.size(), 6u);
  auto gelu = [](double x, bool tanh_form) {
    if (tanh_form) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  };
  expect_close(out[0].f32, {gelu(1, false), gelu(-1, false), gelu(-2, false), NAN}, 1e-7);
  expect_close(out[1].f32, {gelu(1, true), gelu(-1, true), gelu(-2, true), NAN}, 1e-7);
  EXPECT_NEAR(out[0].f32[0], 0.8413447460685429, 1e-7);  // Phi(1)
  EXPECT_GT(std::abs(out[0].f32[2] - out[1].f32[2]), 5e-5);  // the two forms differ
  expect_same(out[2].f32, {1, -0.1f, -0.2f, kNaN});
  expect_same(out[3].f32, {1, -1, -1, kNaN});  // NaN stays NaN
  expect_same(out[4].f32, {0.5f, -1, -2, kNaN});
  expect_same(out[5].f32, {0.5f, -1, -1, kNaN});
}

TEST(InterpreterPointwise, CastsToAndFromBool) {
  const auto out = run_ok(module_text("(%x: f32[7], %i: i32[3], %b: bool[2]) -> (bool[7], i32[7], f32[2], i32[2], "
                                      "bool[3], f16[3])",
                                      R"(
    %xb = cast(%x) {dtype = "bool"} : bool[7]
    %xi = cast(%x) {dtype = "i32"} : i32[7]
    %bf = cast(%b) {dtype = "f32"} : f32[2]
    %bi = cast(%b) {dtype = "i32"} : i32[2]
    %ib = cast(%i) {dtype = "bool"} : bool[3]
    %ih = cast(%i) {dtype = "f16"} : f16[3]
    return %xb, %xi, %bf, %bi, %ib, %ih)"),
                          {f32({7}, {0, -0.0f, 2.5f, kNaN, 3e9f, -3e9f, -2.7f}), i32({3}, {0, 5, -3}),
                           boolean({2}, {1, 0})});
  ASSERT_EQ(out.size(), 6u);
  using V = std::vector<int32_t>;
  EXPECT_EQ(out[0].dtype, DType::kBool);
  EXPECT_EQ(out[0].i32, (V{0, 0, 1, 1, 1, 1, 1}));  // x != 0; NaN is true
  EXPECT_EQ(out[1].i32, (V{0, 0, 2, 0, kMax, kMin, -2}));
  EXPECT_EQ(out[2].f32, (std::vector<float>{1, 0}));
  EXPECT_EQ(out[3].dtype, DType::kI32);
  EXPECT_EQ(out[3].i32, (V{1, 0}));
  EXPECT_EQ(out[4].i32, (V{0, 1, 1}));
  EXPECT_EQ(out[5].dtype, DType::kF16);
  EXPECT_EQ(out[5].f32, (std::vector<float>{0, 5, -3}));
}

TEST(InterpreterPointwise, BoolArgumentsHoldZeroOrOne) {
  const std::string text = module_text("(%b: bool[3]) -> (bool[3])", "%n = logical_not(%b) : bool[3]\nreturn %n");
  const auto out = run_ok(text, {boolean({3}, {1, 0, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].i32, (std::vector<int32_t>{0, 1, 0}));
  EXPECT_TRUE(contains(run_error(text, {boolean({3}, {1, 2, 0})}), "bool values are 0 or 1"));
  EXPECT_TRUE(contains(run_error(text, {i32({3}, {1, 0, 1})}), "got a i32 tensor"));
}

TEST(InterpreterNorms, LayerNormWithAndWithoutAffine) {
  const auto out = run_ok(module_text("(%x: f32[2, 4], %w: f32[4], %b: f32[4]) -> (f32[2, 4], f32[2, 4], f32[2, 4])", R"(
    %n = layer_norm(%x) {eps = 1e-05} : f32[2, 4]
    %nw = layer_norm(%x, %w) {eps = 1e-05} : f32[2, 4]
    %nwb = layer_norm(%x, %w, %b) {eps = 1e-05} : f32[2, 4]
    return %n, %nw, %nwb)"),
                          {f32({2, 4}, {1, 2, 3, 4, 10, 10, 10, 10}), f32({4}, {1, 0.5f, 2, -1}), f32({4}, {0, 1, 0, 1})});
  ASSERT_EQ(out.size(), 3u);
  const double inv = 1 / std::sqrt(1.25 + 1e-5);  // row 0: mean 2.5, biased variance 1.25
  const std::vector<double> plain = {-1.5 * inv, -0.5 * inv, 0.5 * inv, 1.5 * inv, 0, 0, 0, 0};
  const std::vector<double> w = {1, 0.5, 2, -1}, b = {0, 1, 0, 1};
  std::vector<double> scaled(8), shifted(8);
  for (int i = 0; i < 8; ++i) {
    scaled[i] = plain[i] * w[i % 4];
    shifted[i] = scaled[i] + b[i % 4];
  }
  expect_close(out[0].f32, plain, 1e-7);
  expect_close(out[1].f32, scaled, 1e-7);
  expect_close(out[2].f32, shifted, 1e-7);
}

TEST(InterpreterLayout, ConcatAndFlip) {
  const auto out = run_ok(
      module_text("(%a: f32[2, 1], %b: f32[2, 2], %c: f32[2, 3], %i: i32[1, 2], %j: i32[2, 2]) -> (f32[2, 6], "
                  "i32[3, 2], f32[2, 3], f32[2, 3])",
                  R"(
    %cat = concat(%a, %b, %c) {axis = -1} : f32[2, 6]
    %cati = concat(%i, %j) {axis = 0} : i32[3, 2]
    %f0 = flip(%c) {axis = 0} : f32[2, 3]
    %f1 = flip(%c) {axis = -1} : f32[2, 3]
    return %cat, %cati, %f0, %f1)"),
      {f32({2, 1}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}), f32({2, 3}, {7, 8, 9, 10, 11, 12}), i32({1, 2}, {1, 2}),
       i32({2, 2}, {3, 4, 5, 6})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{1, 3, 4, 7, 8, 9, 2, 5, 6, 10, 11, 12}));
  EXPECT_EQ(out[1].i32, (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(out[2].f32, (std::vector<float>{10, 11, 12, 7, 8, 9}));
  EXPECT_EQ(out[3].f32, (std::vector<float>{9, 8, 7, 12, 11, 10}));
}

TEST(InterpreterGathers, IndexSelectAndGather) {
  const std::string text = module_text(
      "(%x: f32[3, 2], %idx: i32[4], %cols: i32[3], %g: i32[2, 2], %h: i32[1, 2]) -> (f32[4, 2], f32[3, 3], "
      "f32[2, 2], f32[1, 2])",
      R"(
    %rows = index_select(%x, %idx) {axis = 0} : f32[4, 2]
    %picked = index_select(%x, %cols) {axis = -1} : f32[3, 3]
    %g1 = gather(%x, %g) {axis = 1} : f32[2, 2]
    %g0 = gather(%x, %h) {axis = 0} : f32[1, 2]
    return %rows, %picked, %g1, %g0)");
  const HostTensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  auto args = [&](std::vector<int32_t> idx, std::vector<int32_t> g) {
    return std::vector<HostTensor>{x, i32({4}, std::move(idx)), i32({3}, {1, 1, 0}), i32({2, 2}, std::move(g)),
                                   i32({1, 2}, {2, 0})};
  };
  const auto out = run_ok(text, args({2, 0, 2, 1}, {0, 0, 1, 0}));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{5, 6, 1, 2, 5, 6, 3, 4}));
  EXPECT_EQ(out[1].f32, (std::vector<float>{2, 2, 1, 4, 4, 3, 6, 6, 5}));
  EXPECT_EQ(out[2].f32, (std::vector<float>{1, 1, 4, 3}));  // idx [2, 2] smaller than x [3, 2]: torch.gather
  EXPECT_EQ(out[3].f32, (std::vector<float>{5, 2}));

  std::string message = run_error(text, args({2, 3, 0, 0}, {0, 0, 1, 0}));
  EXPECT_TRUE(contains(message, "node %rows (index_select)") &&
              contains(message, "index 3 at position 1 is out of range for axis 0 of size 3"))
      << message;
  message = run_error(text, args({2, -1, 0, 0}, {0, 0, 1, 0}));
  EXPECT_TRUE(contains(message, "index -1")) << message;
  message = run_error(text, args({0, 0, 0, 0}, {0, 2, 1, 0}));
  EXPECT_TRUE(contains(message, "node %g1 (gather)") && contains(message, "axis 1 of size 2")) << message;
  message = run_error(module_text("(%x: f32[3, 2], %g: i32[4, 1]) -> (f32[4, 1])",
                                  "%g1 = gather(%x, %g) {axis = 1} : f32[4, 1]\nreturn %g1"),
                      {x, i32({4, 1}, {0, 0, 0, 0})});
  EXPECT_TRUE(contains(message, "index dim 0 has size 4, more than x's 3")) << message;
  // A captured node's source location is part of the error.
  message = run_error(module_text("(%x: f32[3, 2], %i: i32[1]) -> (f32[1, 2])",
                                  "%s = index_select(%x, %i) {axis = 0} : f32[1, 2] loc \"model.py:12 in forward\"\n"
                                  "return %s"),
                      {x, i32({1}, {7})});
  EXPECT_TRUE(contains(message, "f: node %s (index_select, model.py:12 in forward)")) << message;
}

TEST(InterpreterReductions, MinProdArgminKeepdimNaNAndI32) {
  const auto out = run_ok(
      module_text("(%x: f32[2, 3], %i: i32[2, 3]) -> (f32[2, 1], f32[3], i32[2], i32[1, 3], i32[2], i32[1, 3], i32[3], "
                  "i32[2], i32[2])",
                  R"(
    %min = reduce_min(%x) {axis = -1, keepdim = 1} : f32[2, 1]
    %prod = reduce_prod(%x) {axis = 0} : f32[3]
    %amin = argmin(%x) {axis = 1} : i32[2]
    %amax = argmax(%x) {axis = 0, keepdim = 1} : i32[1, 3]
    %isum = reduce_sum(%i) {axis = 1} : i32[2]
    %iprod = reduce_prod(%i) {axis = 0, keepdim = 1} : i32[1, 3]
    %imax = reduce_max(%i) {axis = 0} : i32[3]
    %imin = reduce_min(%i) {axis = 1} : i32[2]
    %iamin = argmin(%i) {axis = -1} : i32[2]
    return %min, %prod, %amin, %amax, %isum, %iprod, %imax, %imin, %iamin)"),
      {f32({2, 3}, {3, 1, 1, kNaN, -2, 5}), i32({2, 3}, {kMax, 1, 5, 1, 3, -5})});
  ASSERT_EQ(out.size(), 9u);
  using V = std::vector<int32_t>;
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 1}));
  expect_same(out[0].f32, {1, kNaN});
  expect_same(out[1].f32, {kNaN, -2, 5});
  EXPECT_EQ(out[2].i32, (V{1, 0}));  // the first of tied minima; NaN counts as the extreme
  EXPECT_EQ(out[3].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(out[3].i32, (V{1, 0, 1}));
  EXPECT_EQ(out[4].i32, (V{kMin + 5, -1}));  // wraps like int32
  EXPECT_EQ(out[5].i32, (V{kMax, 3, -25}));
  EXPECT_EQ(out[6].i32, (V{kMax, 3, 5}));
  EXPECT_EQ(out[7].i32, (V{1, -5}));
  EXPECT_EQ(out[8].i32, (V{1, 2}));
}

TEST(InterpreterReductions, LogSoftmax) {
  const std::vector<float> x = {1, 2, 3, -1, 0, 40};
  const auto out = run_ok(module_text("(%x: f32[2, 3]) -> (f32[2, 3])", "%y = log_softmax(%x) {axis = -1} : f32[2, 3]\nreturn %y"),
                          {f32({2, 3}, x)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> expected(6);
  for (int r = 0; r < 2; ++r) {
    double total = 0;
    for (int j = 0; j < 3; ++j) total += std::exp(static_cast<double>(x[r * 3 + j]));
    for (int j = 0; j < 3; ++j) expected[r * 3 + j] = x[r * 3 + j] - std::log(total);
  }
  expect_close(out[0].f32, expected, 1e-7);
}

TEST(InterpreterScans, CumsumCumprodAccumulateInDoubleAndWrapI32) {
  const auto out = run_ok(
      module_text("(%x: f32[3], %y: f32[2, 3], %i: i32[3]) -> (f32[3], f32[2, 3], f32[2, 3], i32[3], i32[3])", R"(
    %c = cumsum(%x) {axis = 0} : f32[3]
    %c0 = cumsum(%y) {axis = 0} : f32[2, 3]
    %p1 = cumprod(%y) {axis = -1} : f32[2, 3]
    %ci = cumsum(%i) {axis = 0} : i32[3]
    %pi = cumprod(%i) {axis = 0} : i32[3]
    return %c, %c0, %p1, %ci, %pi)"),
      {f32({3}, {16777216, 1, -16777216}), f32({2, 3}, {1, 2, 3, 4, 5, 6}), i32({3}, {kMax, 1, 2})});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].f32, (std::vector<float>{16777216, 16777216, 1}));  // a float running sum would end at 0
  EXPECT_EQ(out[1].f32, (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(out[2].f32, (std::vector<float>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(out[3].i32, (std::vector<int32_t>{kMax, kMin, kMin + 2}));
  EXPECT_EQ(out[4].i32, (std::vector<int32_t>{kMax, kMax, -2}));
}

// A batched matmul split over batches and blocks gives the serial bits and the double-precision product.
TEST(InterpreterMatmul, BatchedSplitMatchesSerialAndReference) {
  constexpr int B = 3, M = 20, K = 64, N = 50;
  const std::string text = module_text("(%a: f32[3, 20, 64], %b: f32[3, 64, 50]) -> (f32[3, 20, 50])",
                                       "%y = matmul(%a, %b) : f32[3, 20, 50]\nreturn %y");
  const auto a = random_values(1, B * M * K), b = random_values(2, B * K * N);
  const auto serial = run_ok(text, {f32({B, M, K}, a), f32({B, K, N}, b)}, {}, {8, 1});
  const auto split = run_ok(text, {f32({B, M, K}, a), f32({B, K, N}, b)}, {}, {8, 3});
  ASSERT_EQ(serial.size(), 1u);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(serial[0].f32, split[0].f32);
  std::vector<double> expected(B * M * N, 0.0);
  for (int batch = 0; batch < B; ++batch)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n)
        for (int k = 0; k < K; ++k)
          expected[(batch * M + m) * N + n] +=
              static_cast<double>(a[(batch * M + m) * K + k]) * b[(batch * K + k) * N + n];
  expect_close(split[0].f32, expected, 1e-6);
}

}  // namespace
}  // namespace agentcompile::ir
