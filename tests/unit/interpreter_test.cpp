// The reference interpreter: every op against a naive double-precision expectation written here,
// rope (plain and llama3) against Hugging Face's formulas, causal GQA attention across two calls,
// and whole tiny llama/qwen3 modules for prefill/decode consistency, determinism and errors.
#include "ir/interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numbers>
#include <tuple>

#include "frontend/model_builder.h"

namespace agentcompile::ir {
namespace {

using Weights = std::map<std::string, std::vector<float>>;

// Deterministic values in [-1, 1): splitmix64 of (seed, index).
float hashed_uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) / 4503599627370496.0 - 1.0);
}

std::vector<float> random_values(uint64_t seed, size_t count, float scale = 1.0f) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = scale * hashed_uniform(seed, i);
  return values;
}

Shape dims(std::vector<int64_t> sizes) {
  Shape shape;
  for (int64_t size : sizes) shape.push_back(size < 0 ? Dim::T() : Dim::of(size));  // -1 stands for T
  return shape;
}
TensorType f32(std::vector<int64_t> sizes) { return TensorType{DType::kF32, dims(std::move(sizes))}; }
TensorType i32(std::vector<int64_t> sizes) { return TensorType{DType::kI32, dims(std::move(sizes))}; }

HostTensor host_f32(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor tensor;
  tensor.shape = std::move(shape);
  tensor.f32 = std::move(values);
  return tensor;
}

void add_param(Module& module, Weights& weights, const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
  module.params.push_back(ParamDecl{name, f32(shape), "", 0});
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  weights[name] = random_values(seed, static_cast<size_t>(count));
}

WeightLoader loader_for(Weights weights) {
  return [weights = std::move(weights)](const std::string& name, std::vector<float>& out) {
    auto it = weights.find(name);
    if (it == weights.end()) return error(ErrorCode::kNotFound, "test has no tensor " + name);
    out = it->second;
    return Status::ok();
  };
}

std::vector<HostTensor> run_ok(const Module& module, const Weights& weights, const std::vector<HostTensor>& args) {
  Interpreter interpreter(module, loader_for(weights), InterpreterOptions{16, 2});
  auto out = interpreter.run("f", args);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  return out ? *out : std::vector<HostTensor>{};
}

// |actual - expected| <= tol * max(1, max|expected|), element by element.
void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  double scale = 1.0;
  for (double e : expected) scale = std::max(scale, std::abs(e));
  for (size_t i = 0; i < actual.size(); ++i) ASSERT_NEAR(actual[i], expected[i], tol * scale) << "at element " << i;
}

// Builds a one-function module "f" whose body is `body(builder, args)`.
template <typename Body>
Module one_function(Module module, std::vector<TensorType> arg_types, Body body) {
  FunctionBuilder b(module, "f");
  std::vector<ValueId> args;
  for (size_t i = 0; i < arg_types.size(); ++i) args.push_back(b.arg("a" + std::to_string(i), arg_types[i]));
  b.result(body(b, args));
  EXPECT_TRUE(b.finish().is_ok()) << b.status().to_string();
  return module;
}

TEST(InterpreterOps, LinearWithBias) {
  for (auto [M, N, K] : {std::tuple{3, 7, 13}, {5, 21, 37}, {1, 4, 8}, {2, 3, 5}}) {
    Module module;
    Weights weights;
    add_param(module, weights, "w", {N, K}, 1);
    add_param(module, weights, "b", {N}, 2);
    module = one_function(module, {f32({-1, K})}, [](FunctionBuilder& b, auto a) {
      return b.op(OpKind::kLinear, {a[0], b.weight("w"), b.weight("b")});
    });
    const auto x = random_values(3, M * K);
    auto out = run_ok(module, weights, {host_f32({M, K}, x)});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape, (std::vector<int64_t>{M, N}));
    std::vector<double> expected(M * N);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double sum = weights["b"][n];
        for (int k = 0; k < K; ++k) sum += static_cast<double>(x[m * K + k]) * weights["w"][n * K + k];
        expected[m * N + n] = sum;
      }
    expect_close(out[0].f32, expected, 1e-6);
  }
}

TEST(InterpreterOps, BroadcastingArithmetic) {
  const auto a = random_values(4, 24);
  const auto b = random_values(5, 3);
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv}) {
    Module module = one_function(Module{}, {f32({2, 3, 4}), f32({3, 1})}, [op](FunctionBuilder& fb, auto x) {
      return fb.op(op, {x[0], x[1]});
    });
    auto out = run_ok(module, {}, {host_f32({2, 3, 4}, a), host_f32({3, 1}, b)});
    ASSERT_EQ(out.size(), 1u);
    std::vector<double> expected(24);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) {
          const double p = a[(i * 3 + j) * 4 + k], q = b[j];
          expected[(i * 3 + j) * 4 + k] = op == OpKind::kAdd   ? p + q
                                          : op == OpKind::kSub ? p - q
                                          : op == OpKind::kMul ? p * q
                                                               : p / q;
        }
    expect_close(out[0].f32, expected, 1e-6);
  }
}

TEST(InterpreterOps, RmsNormSiluExpNeg) {
  Module module;
  Weights weights;
  add_param(module, weights, "g", {16}, 6);
  module = one_function(module, {f32({3, 16})}, [](FunctionBuilder& b, auto a) {
    ValueId n = b.op(OpKind::kRmsNorm, {a[0], b.weight("g")}, {{"eps", 1e-5}});
    return b.op(OpKind::kNeg, {b.op(OpKind::kExp, {b.op(OpKind::kSilu, {n})})});
  });
  const auto x = random_values(7, 48, 3.0f);
  auto out = run_ok(module, weights, {host_f32({3, 16}, x)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> expected(48);
  for (int r = 0; r < 3; ++r) {
    double squares = 0;
    for (int i = 0; i < 16; ++i) squares += static_cast<double>(x[r * 16 + i]) * x[r * 16 + i];
    const double inv = 1.0 / std::sqrt(squares / 16 + 1e-5);
    for (int i = 0; i < 16; ++i) {
      const double n = x[r * 16 + i] * inv * weights["g"][i];
      expected[r * 16 + i] = -std::exp(n / (1.0 + std::exp(-n)));
    }
  }
  expect_close(out[0].f32, expected, 2e-6);
}

TEST(InterpreterOps, SoftmaxAndReductions) {
  const auto x = random_values(8, 30, 4.0f);  // [2, 5, 3]
  Module module = one_function(Module{}, {f32({2, 5, 3})}, [](FunctionBuilder& b, auto a) {
    b.result(b.op(OpKind::kReduceSum, {a[0]}, {{"axis", int64_t{1}}, {"keepdim", int64_t{1}}}));
    b.result(b.op(OpKind::kReduceMax, {a[0]}, {{"axis", int64_t{-1}}}));
    b.result(b.op(OpKind::kReduceMean, {a[0]}, {{"axis", int64_t{0}}}));
    return b.op(OpKind::kSoftmax, {a[0]}, {{"axis", int64_t{1}}});
  });
  auto out = run_ok(module, {}, {host_f32({2, 5, 3}, x)});
  ASSERT_EQ(out.size(), 4u);
  auto at = [&](int i, int j, int k) { return static_cast<double>(x[(i * 5 + j) * 3 + k]); };
  std::vector<double> sum(6), max(10), mean(15), soft(30);
  for (int i = 0; i < 2; ++i)
    for (int k = 0; k < 3; ++k) {
      double total = 0, expsum = 0;
      for (int j = 0; j < 5; ++j) total += at(i, j, k), expsum += std::exp(at(i, j, k));
      sum[i * 3 + k] = total;
      for (int j = 0; j < 5; ++j) soft[(i * 5 + j) * 3 + k] = std::exp(at(i, j, k)) / expsum;
    }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 5; ++j) max[i * 5 + j] = std::max({at(i, j, 0), at(i, j, 1), at(i, j, 2)});
  for (int j = 0; j < 5; ++j)
    for (int k = 0; k < 3; ++k) mean[j * 3 + k] = (at(0, j, k) + at(1, j, k)) / 2;
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{5, 3}));
  expect_close(out[0].f32, sum, 1e-6);
  expect_close(out[1].f32, max, 0);
  expect_close(out[2].f32, mean, 1e-6);
  expect_close(out[3].f32, soft, 1e-6);
}

TEST(InterpreterOps, ArgmaxTiesTakeLowestIndex) {
  Module module = one_function(Module{}, {f32({3, 4})}, [](FunctionBuilder& b, auto a) {
    return b.op(OpKind::kArgmax, {a[0]}, {{"axis", int64_t{-1}}});
  });
  auto out = run_ok(module, {}, {host_f32({3, 4}, {1, 5, 5, 2, 7, 7, 7, 7, -3, -1, -2, -1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, DType::kI32);
  EXPECT_EQ(out[0].i32, (std::vector<int32_t>{1, 0, 1}));
}

TEST(InterpreterOps, TransposeSliceReshapeCast) {
  const auto x = random_values(9, 24, 5.0f);  // [2, 3, 4]
  Module module = one_function(Module{}, {f32({2, 3, 4})}, [](FunctionBuilder& b, auto a) {
    b.result(b.op(OpKind::kTranspose, {a[0]}, {{"perm", dims({2, 0, 1})}}));  // [4, 2, 3]
    b.result(b.op(OpKind::kSlice, {a[0]},
                  {{"axis", int64_t{1}}, {"start", int64_t{-2}}, {"length", int64_t{2}}}));  // [2, 2, 4]
    b.result(
        b.op(OpKind::kCast, {b.op(OpKind::kView, {a[0]}, {{"shape", dims({6, 4})}})}, {{"dtype", std::string("i32")}}));
    return b.op(OpKind::kReshape, {a[0]}, {{"shape", dims({4, 6})}});
  });
  auto out = run_ok(module, {}, {host_f32({2, 3, 4}, x)});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{4, 2, 3}));
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(out[0].f32[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{2, 2, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(out[1].f32[(i * 2 + j) * 4 + k], x[(i * 3 + j + 1) * 4 + k]);
  EXPECT_EQ(out[2].shape, (std::vector<int64_t>{6, 4}));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[2].i32[i], static_cast<int32_t>(std::trunc(x[i])));  // toward zero
  EXPECT_EQ(out[3].shape, (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(out[3].f32, x);
}

TEST(InterpreterOps, MatmulAndBroadcast) {
  const auto a = random_values(15, 24), b = random_values(16, 40), c = random_values(17, 3);
  Module module =
      one_function(Module{}, {f32({2, 3, 4}), f32({2, 4, 5}), f32({3, 1})}, [](FunctionBuilder& fb, auto x) {
        fb.result(fb.op(OpKind::kBroadcast, {x[2]}, {{"shape", dims({2, 3, 2})}}));
        return fb.op(OpKind::kMatmul, {x[0], x[1]});
      });
  auto out = run_ok(module, {}, {host_f32({2, 3, 4}, a), host_f32({2, 4, 5}, b), host_f32({3, 1}, c)});
  ASSERT_EQ(out.size(), 2u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[0].f32[i], c[(i / 2) % 3]);
  std::vector<double> expected(30);
  for (int batch = 0; batch < 2; ++batch)
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 5; ++n)
        for (int k = 0; k < 4; ++k)
          expected[(batch * 3 + m) * 5 + n] +=
              static_cast<double>(a[(batch * 3 + m) * 4 + k]) * b[(batch * 4 + k) * 5 + n];
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{2, 3, 5}));
  expect_close(out[1].f32, expected, 1e-6);
}

// Sizes large enough that linear and attention split across threads give the serial result exactly.
TEST(InterpreterOps, ThreadSplitsMatchSerialBitForBit) {
  constexpr int N = 300, K = 203, NH = 4, KV = 2, D = 64, T = 4, kPos = 300;
  Module module;
  Weights weights;
  add_param(module, weights, "w", {N, K}, 18);
  module.states = {StateDecl{"k", TensorType{DType::kF32, {Dim::L(), Dim::of(KV), Dim::of(D)}}},
                   StateDecl{"v", TensorType{DType::kF32, {Dim::L(), Dim::of(KV), Dim::of(D)}}}};
  module =
      one_function(module, {f32({-1, K}), f32({-1, NH, D}), f32({-1, KV, D}), i32({})}, [](FunctionBuilder& b, auto a) {
        b.result(b.op(OpKind::kLinear, {a[0], b.weight("w")}));
        ValueId kc = b.op(OpKind::kKvAppend, {a[2], a[3]}, {{"state", std::string("k")}});
        ValueId vc = b.op(OpKind::kKvAppend, {a[2], a[3]}, {{"state", std::string("v")}});
        return b.op(OpKind::kAttention, {a[1], kc, vc, a[3]}, {{"scale", 0.125}});
      });
  std::vector<std::vector<HostTensor>> results;
  for (int threads : {1, 3}) {
    Interpreter interpreter(module, loader_for(weights), InterpreterOptions{512, threads});
    // Fill cache rows 0..kPos-1 with 100 rows per call, then the measured call at kPos.
    for (int pos = 0; pos < kPos; pos += 100)
      ASSERT_TRUE(
          interpreter
              .run("f", {host_f32({100, K}, random_values(19, 100 * K)),
                         host_f32({100, NH, D}, random_values(20, 100 * NH * D)),
                         host_f32({100, KV, D}, random_values(21 + pos, 100 * KV * D)), HostTensor::scalar_i32(pos)})
              .has_value());
    auto out = interpreter.run(
        "f", {host_f32({T, K}, random_values(22, T * K)), host_f32({T, NH, D}, random_values(23, T * NH * D)),
              host_f32({T, KV, D}, random_values(24, T * KV * D)), HostTensor::scalar_i32(kPos)});
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    results.push_back(*out);
  }
  EXPECT_EQ(results[0][0].f32, results[1][0].f32);
  EXPECT_EQ(results[0][1].f32, results[1][1].f32);
}

// HF's rope in double: inv_freq (optionally llama3-scaled), angle (pos+t)*inv, rotate-half.
std::vector<double> naive_rope(const std::vector<float>& x, int T, int H, int D, int pos, double theta, bool llama3,
                               double factor = 1, double low = 1, double high = 4, double original = 8192) {
  std::vector<double> inv(D / 2);
  for (int i = 0; i < D / 2; ++i) {
    inv[i] = 1.0 / std::pow(theta, 2.0 * i / D);
    if (!llama3) continue;
    const double wavelen = 2 * std::numbers::pi / inv[i];
    if (wavelen > original / low) {
      inv[i] /= factor;
    } else if (wavelen >= original / high) {
      const double smooth = (original / wavelen - low) / (high - low);
      inv[i] = (1 - smooth) * inv[i] / factor + smooth * inv[i];
    }
  }
  std::vector<double> out(x.size());
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < D / 2; ++i) {
        const double angle = (pos + t) * inv[i], c = std::cos(angle), s = std::sin(angle);
        const double x1 = x[(t * H + h) * D + i], x2 = x[(t * H + h) * D + i + D / 2];
        out[(t * H + h) * D + i] = x1 * c - x2 * s;
        out[(t * H + h) * D + i + D / 2] = x2 * c + x1 * s;
      }
  return out;
}

std::vector<float> run_rope(const Attrs& attrs, const std::vector<float>& x, int T, int H, int D, int pos) {
  Module module = one_function(Module{}, {f32({-1, H, D}), i32({})}, [&](FunctionBuilder& b, auto a) {
    return b.op(OpKind::kRope, {a[0], a[1]}, attrs);
  });
  auto out = run_ok(module, {}, {host_f32({T, H, D}, x), HostTensor::scalar_i32(pos)});
  return out.empty() ? std::vector<float>{} : out[0].f32;
}

TEST(InterpreterRope, PlainMatchesFormulaAndHonoursPos) {
  const auto x = random_values(10, 3 * 2 * 8);  // [3, 2, 8]
  const Attrs attrs{{"theta", 10000.0}, {"scaling", std::string("none")}};
  const auto out = run_rope(attrs, x, 3, 2, 8, 5);
  expect_close(out, naive_rope(x, 3, 2, 8, 5, 10000.0, false), 2e-6);
  // Row t at pos 5 is row 5 + t of the same rows laid out from position 0.
  std::vector<float> padded(8 * 2 * 8, 0.5f);
  std::copy(x.begin(), x.end(), padded.begin() + 5 * 16);
  const auto from_zero = run_rope(attrs, padded, 8, 2, 8, 0);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(out[i], from_zero[5 * 16 + i]);
}

TEST(InterpreterRope, Llama3ScalingMatchesHfFormula) {
  // D=16, theta 5e5, original 64: wavelengths 6.3 (high band), 32 (medium) and >= 167 (low band).
  const auto x = random_values(11, 4 * 3 * 16);  // [4, 3, 16]
  const Attrs attrs{{"theta", 500000.0},       {"scaling", std::string("llama3")},
                    {"factor", 8.0},           {"low_freq_factor", 1.0},
                    {"high_freq_factor", 4.0}, {"original_max_position", int64_t{64}}};
  const auto out = run_rope(attrs, x, 4, 3, 16, 100);
  expect_close(out, naive_rope(x, 4, 3, 16, 100, 500000.0, true, 8, 1, 4, 64), 2e-5);
  // Unscaled rope differs in the scaled bands, so the test would catch a dropped scaling.
  const auto plain = naive_rope(x, 4, 3, 16, 100, 500000.0, false);
  double diff = 0;
  for (size_t i = 0; i < out.size(); ++i) diff = std::max(diff, std::abs(out[i] - plain[i]));
  EXPECT_GT(diff, 1e-2);
}

TEST(InterpreterAttention, CausalGqaAcrossTwoCalls) {
  constexpr int NH = 4, KV = 2, D = 8;
  Module module;
  module.states = {StateDecl{"kv.k", TensorType{DType::kF32, {Dim::L(), Dim::of(KV), Dim::of(D)}}},
                   StateDecl{"kv.v", TensorType{DType::kF32, {Dim::L(), Dim::of(KV), Dim::of(D)}}}};
  const double scale = 1.0 / std::sqrt(8.0);
  module = one_function(module, {f32({-1, NH, D}), f32({-1, KV, D}), f32({-1, KV, D}), i32({})},
                        [&](FunctionBuilder& b, auto a) {
                          ValueId kc = b.op(OpKind::kKvAppend, {a[1], a[3]}, {{"state", std::string("kv.k")}});
                          ValueId vc = b.op(OpKind::kKvAppend, {a[2], a[3]}, {{"state", std::string("kv.v")}});
                          return b.op(OpKind::kAttention, {a[0], kc, vc, a[3]}, {{"scale", scale}});
                        });
  const auto k = random_values(12, 8 * KV * D), v = random_values(13, 8 * KV * D);  // rows 0..7
  const auto q = random_values(14, 8 * NH * D, 2.0f);
  auto rows = [](const std::vector<float>& all, int from, int count, int width) {
    return std::vector<float>(all.begin() + from * width, all.begin() + (from + count) * width);
  };
  Interpreter interpreter(module, loader_for({}), InterpreterOptions{16, 3});
  auto call = [&](int pos, int T) {
    return interpreter.run(
        "f", {host_f32({T, NH, D}, rows(q, pos, T, NH * D)), host_f32({T, KV, D}, rows(k, pos, T, KV * D)),
              host_f32({T, KV, D}, rows(v, pos, T, KV * D)), HostTensor::scalar_i32(pos)});
  };
  ASSERT_TRUE(call(0, 3).has_value());  // the prior append: rows 0..2
  auto out = call(3, 5);                // queries at positions 3..7
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  std::vector<double> expected(5 * NH * D);
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < NH; ++h) {
      const int g = h / (NH / KV), keys = 3 + t + 1;
      std::vector<double> w(keys);
      double max_score = -1e300, total = 0;
      for (int j = 0; j < keys; ++j) {
        double dot = 0;
        for (int d = 0; d < D; ++d) dot += static_cast<double>(q[((3 + t) * NH + h) * D + d]) * k[(j * KV + g) * D + d];
        max_score = std::max(max_score, w[j] = dot * scale);
      }
      for (double& x : w) total += (x = std::exp(x - max_score));
      for (int d = 0; d < D; ++d) {
        double acc = 0;
        for (int j = 0; j < keys; ++j) acc += w[j] / total * v[(j * KV + g) * D + d];
        expected[(t * NH + h) * D + d] = acc;
      }
    }
  expect_close((*out)[0].f32, expected, 1e-6);
  // The cache holds what was appended; set_state overwrites it whole.
  auto cache = interpreter.state("kv.v");
  ASSERT_TRUE(cache.has_value()) << cache.status().to_string();
  ASSERT_EQ(cache->size(), 16u * KV * D);
  EXPECT_EQ(std::vector<float>(cache->begin(), cache->begin() + v.size()), v);
  EXPECT_FALSE(interpreter.set_state("kv.v", v).is_ok());  // 8 rows, not 16
  ASSERT_TRUE(interpreter.set_state("kv.v", std::vector<float>(16 * KV * D, 2.0f)).is_ok());
  EXPECT_EQ((*interpreter.state("kv.v"))[5], 2.0f);
  EXPECT_FALSE(interpreter.state("kv.x").has_value());
  auto past_end =
      interpreter.run("f", {host_f32({5, NH, D}, rows(q, 0, 5, NH * D)), host_f32({5, KV, D}, rows(k, 0, 5, KV * D)),
                            host_f32({5, KV, D}, rows(v, 0, 5, KV * D)), HostTensor::scalar_i32(14)});
  ASSERT_FALSE(past_end.has_value());
  EXPECT_NE(past_end.status().message().find("kv.k"), std::string::npos) << past_end.status().message();
  EXPECT_NE(past_end.status().message().find("max_context 16"), std::string::npos) << past_end.status().message();
}

// ---- whole tiny models ----

const char* kTinyLlama = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 96,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 101,
  "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "torch_dtype": "float32",
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 32}})";
const char* kTinyQwen3 = R"({"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
  "vocab_size": 97, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16"})";

// Norm weights ~ 1 + U(-0.1, 0.1), everything else U(-0.15, 0.15), seeded by the tensor's name.
WeightLoader model_loader(const Module& module) {
  std::map<std::string, int64_t> sizes;
  for (const ParamDecl& p : module.params) sizes[p.name] = static_elements(p.type.shape);
  return [sizes](const std::string& name, std::vector<float>& out) {
    uint64_t seed = 1469598103934665603ull;  // FNV-1a of the name
    for (char c : name) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    const bool norm = name.find("norm.weight") != std::string::npos;
    out = random_values(seed, static_cast<size_t>(sizes.at(name)), norm ? 0.1f : 0.15f);
    if (norm)
      for (float& v : out) v += 1.0f;
    return Status::ok();
  };
}

Module build(const char* json, bool all_logits) {
  auto config = frontend::parse_hf_config(nlohmann::json::parse(json), "inline");
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  auto module = frontend::build_module(*config, frontend::BuildOptions{all_logits});
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return *module;
}

HostTensor tokens(std::vector<int32_t> ids) {
  const auto count = static_cast<int64_t>(ids.size());
  return HostTensor::from_i32({count}, std::move(ids));
}

std::vector<float> row(const HostTensor& logits, int64_t r) {
  const int64_t V = logits.shape[1];
  return std::vector<float>(logits.f32.begin() + r * V, logits.f32.begin() + (r + 1) * V);
}

void expect_rows_close(const std::vector<float>& a, const std::vector<float>& b, double rel) {
  ASSERT_EQ(a.size(), b.size());
  double scale = 0;
  for (float v : b) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], rel * scale) << "at logit " << i;
}

class TinyModel : public ::testing::TestWithParam<const char*> {};

TEST_P(TinyModel, PrefillEqualsPrefillThenDecode) {
  const Module all = build(GetParam(), true);
  const Module last = build(GetParam(), false);
  const std::vector<int32_t> ids{3, 17, 42, 8, 91, 5};
  Interpreter whole(all, model_loader(all), InterpreterOptions{32, 2});
  auto full = whole.run("prefill", {tokens(ids), HostTensor::scalar_i32(0)});
  ASSERT_TRUE(full.has_value()) << full.status().to_string();
  const HostTensor& logits = (*full)[0];  // [6, V]
  ASSERT_EQ(logits.shape.size(), 2u);
  ASSERT_EQ(logits.shape[0], 6);

  Interpreter split(all, model_loader(all), InterpreterOptions{32, 2});
  auto head = split.run("prefill", {tokens({3, 17, 42, 8}), HostTensor::scalar_i32(0)});
  ASSERT_TRUE(head.has_value()) << head.status().to_string();
  for (int r = 0; r < 4; ++r) expect_rows_close(row((*head)[0], r), row(logits, r), 1e-5);
  for (int step = 0; step < 2; ++step) {
    auto decoded = split.run("decode", {tokens({ids[4 + step]}), HostTensor::scalar_i32(4 + step)});
    ASSERT_TRUE(decoded.has_value()) << decoded.status().to_string();
    expect_rows_close(row((*decoded)[0], 0), row(logits, 4 + step), 1e-5);
  }
  // The default prefill returns just the last row.
  Interpreter last_only(last, model_loader(last), InterpreterOptions{32, 2});
  auto final_row = last_only.run("prefill", {tokens(ids), HostTensor::scalar_i32(0)});
  ASSERT_TRUE(final_row.has_value()) << final_row.status().to_string();
  EXPECT_EQ((*final_row)[0].shape, (std::vector<int64_t>{1, logits.shape[1]}));
  expect_rows_close(row((*final_row)[0], 0), row(logits, 5), 1e-5);
}

TEST_P(TinyModel, GreedyGenerationIsDeterministic) {
  const Module module = build(GetParam(), false);
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5};
  Interpreter one(module, model_loader(module), InterpreterOptions{32, 1});
  Interpreter three(module, model_loader(module), InterpreterOptions{32, 3});
  auto a = one.generate_greedy(prompt, 6);
  auto b = three.generate_greedy(prompt, 6);
  auto again = one.generate_greedy(prompt, 6);  // no reset: stale rows are never read
  ASSERT_TRUE(a.has_value()) << a.status().to_string();
  ASSERT_TRUE(b.has_value() && again.has_value());
  ASSERT_EQ(a->tokens.size(), 6u);
  ASSERT_EQ(a->logits.size(), 6u);
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_EQ(a->logits, b->logits);  // bit for bit: the thread split never changes a sum's order
  EXPECT_EQ(a->tokens, again->tokens);
  EXPECT_EQ(a->logits, again->logits);
  for (size_t i = 0; i < a->tokens.size(); ++i) {
    const auto& l = a->logits[i];
    EXPECT_EQ(a->tokens[i], std::max_element(l.begin(), l.end()) - l.begin());
  }
  // Teacher forcing the generated sequence reproduces every step's logits.
  const Module all = build(GetParam(), true);
  Interpreter forced(all, model_loader(all), InterpreterOptions{32, 2});
  std::vector<int32_t> sequence = prompt;
  sequence.insert(sequence.end(), a->tokens.begin(), a->tokens.end() - 1);
  auto full = forced.run("prefill", {tokens(sequence), HostTensor::scalar_i32(0)});
  ASSERT_TRUE(full.has_value()) << full.status().to_string();
  for (size_t i = 0; i < a->logits.size(); ++i) expect_rows_close(a->logits[i], row((*full)[0], 4 + i), 1e-5);
}

TEST_P(TinyModel, ErrorsAreReportedNotCrashed) {
  const Module module = build(GetParam(), false);
  const int64_t vocab = module.find_param("model.embed_tokens.weight")->type.shape[0].value;
  Interpreter interpreter(module, model_loader(module), InterpreterOptions{8, 2});
  auto message = [](const auto& result) {
    return result.has_value() ? std::string("(no error)") : result.status().message();
  };
  auto contains = [](const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; };

  auto past = interpreter.generate_greedy({1, 2, 3, 4, 5, 6}, 4);  // positions 0..8 need 9 rows
  EXPECT_TRUE(contains(message(past), "kv.0.k") && contains(message(past), "max_context 8")) << message(past);
  auto decode_past = interpreter.run("decode", {tokens({1}), HostTensor::scalar_i32(8)});
  EXPECT_TRUE(contains(message(decode_past), "runs past max_context")) << message(decode_past);

  auto bad_id = interpreter.run("prefill", {tokens({1, static_cast<int32_t>(vocab)}), HostTensor::scalar_i32(0)});
  EXPECT_TRUE(contains(message(bad_id), "token id " + std::to_string(vocab)) &&
              contains(message(bad_id), "vocab size " + std::to_string(vocab)))
      << message(bad_id);
  auto negative = interpreter.run("prefill", {tokens({1}), HostTensor::scalar_i32(-1)});
  EXPECT_TRUE(contains(message(negative), "negative")) << message(negative);

  auto wrong_dtype = interpreter.run("prefill", {host_f32({2}, {1, 2}), HostTensor::scalar_i32(0)});
  EXPECT_TRUE(contains(message(wrong_dtype), "prefill: argument 'tokens'")) << message(wrong_dtype);
  auto wrong_shape = interpreter.run("decode", {tokens({1, 2}), HostTensor::scalar_i32(0)});
  EXPECT_TRUE(contains(message(wrong_shape), "decode: argument 'tokens'")) << message(wrong_shape);
  auto wrong_count = interpreter.run("decode", {tokens({1})});
  EXPECT_TRUE(contains(message(wrong_count), "expects 2 arguments")) << message(wrong_count);
  auto unknown = interpreter.run("verify", {});
  EXPECT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kNotFound);

  const std::string broken = "model.layers.1.mlp.up_proj.weight";
  Interpreter failing(module, [&](const std::string& name, std::vector<float>& out) {
    if (name == broken) return error(ErrorCode::kIo, "disk on fire");
    return model_loader(module)(name, out);
  });
  auto failed = failing.run("prefill", {tokens({1, 2}), HostTensor::scalar_i32(0)});
  EXPECT_TRUE(contains(message(failed), broken) && contains(message(failed), "disk on fire")) << message(failed);
  EXPECT_EQ(failed.status().code(), ErrorCode::kIo);
}

INSTANTIATE_TEST_SUITE_P(Interpreter, TinyModel, ::testing::Values(kTinyLlama, kTinyQwen3),
                         [](const auto& info) { return info.index == 0 ? "llama" : "qwen3"; });

// Not an assertion: prints how fast the interpreter runs a SmolLM2-135M-shaped model on 2 threads.
TEST(InterpreterTiming, SmolLM2Sized) {
  const Module module = build(R"({"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152,
    "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": true})",
                              false);
  Interpreter interpreter(module, model_loader(module), InterpreterOptions{256, 2});
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); };
  auto start = Clock::now();
  ASSERT_TRUE(interpreter.run("decode", {tokens({1}), HostTensor::scalar_i32(0)}).has_value());  // loads weights
  std::printf("[timing] weights generated and loaded: %.2f s\n", seconds(start));
  const std::vector<int32_t> prompt{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  start = Clock::now();
  ASSERT_TRUE(interpreter.run("prefill", {tokens(prompt), HostTensor::scalar_i32(0)}).has_value());
  const double prefill = seconds(start);
  start = Clock::now();
  constexpr int kSteps = 8;
  for (int i = 0; i < kSteps; ++i)
    ASSERT_TRUE(interpreter.run("decode", {tokens({7}), HostTensor::scalar_i32(16 + i)}).has_value());
  const double decode = seconds(start) / kSteps;
  std::printf(
      "[timing] SmolLM2-135M shape, 2 threads: prefill %.1f tokens/s (16 tokens in %.3f s), "
      "decode %.1f tokens/s (%.1f ms/token)\n",
      prompt.size() / prefill, prefill, 1.0 / decode, decode * 1e3);

  Module gemv;
  Weights weights;
  add_param(gemv, weights, "w", {1536, 576}, 21);
  gemv = one_function(gemv, {f32({1, 576})}, [](FunctionBuilder& b, auto a) {
    return b.op(OpKind::kLinear, {a[0], b.weight("w")});
  });
  Interpreter linear(gemv, loader_for(weights), InterpreterOptions{16, 2});
  const std::vector<HostTensor> x{host_f32({1, 576}, random_values(22, 576))};
  ASSERT_TRUE(linear.run("f", x).has_value());
  start = Clock::now();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(linear.run("f", x).has_value());
  std::printf("[timing] linear 576x1536, T=1, 2 threads: %.1f us per call\n", seconds(start) / 200 * 1e6);
}

}  // namespace
}  // namespace agentcompile::ir
