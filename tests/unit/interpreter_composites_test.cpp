// The reference interpreter on the primitive ops that carry attention and state, and on the
// primitive decompositions of semantic ops: sdpa (bool and float masks, causal, GQA, rows with no
// key) against a double-precision reference, index_copy into a state, rope with a listed inv_freq
// and a scale, attention with a window, parameter aliases; then RMSNorm, softmax and cached
// attention written as captured graphs write them, which must agree with rmsnorm, softmax and
// attention within 1e-6 relative (the recognition passes rely on these equalities).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "interpreter_ir.h"
#include "ir/interpreter_ops.h"

namespace agentcompile::ir {
namespace {

using namespace ir_test;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// |a - b| <= tol * |b| for every element (an element-wise relative bound).
void expect_relative(const std::vector<float>& actual, const std::vector<float>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_LE(std::abs(static_cast<double>(actual[i]) - expected[i]), tol * std::abs(expected[i]) + 1e-30)
        << "at element " << i << ": " << actual[i] << " vs " << expected[i];
}

// torch's sdpa in double over q[B, NH, S, D], k[B, KV, S2, D], v[B, KV, S2, Dv]; bias(b, h, i, j) is
// added to the scaled score (-inf drops the key). A row without keys is NaN.
struct SdpaSizes {
  int B, NH, KV, S, S2, D, Dv;
};
std::vector<double> naive_sdpa(const SdpaSizes& n, const std::vector<float>& q, const std::vector<float>& k,
                               const std::vector<float>& v, double scale,
                               const std::function<double(int, int, int, int)>& bias) {
  std::vector<double> out(static_cast<size_t>(n.B) * n.NH * n.S * n.Dv);
  for (int b = 0; b < n.B; ++b)
    for (int h = 0; h < n.NH; ++h)
      for (int i = 0; i < n.S; ++i) {
        const int g = b * n.KV + h / (n.NH / n.KV);
        std::vector<double> w(n.S2);
        double max_score = -INFINITY;
        for (int j = 0; j < n.S2; ++j) {
          double dot = 0;
          for (int d = 0; d < n.D; ++d)
            dot += static_cast<double>(q[((b * n.NH + h) * n.S + i) * n.D + d]) * k[(g * n.S2 + j) * n.D + d];
          w[j] = dot * scale + bias(b, h, i, j);
          max_score = std::max(max_score, w[j]);
        }
        double total = 0;
        for (double& x : w) total += (x = std::exp(x - max_score));  // all -inf: NaN, as torch
        for (int d = 0; d < n.Dv; ++d) {
          double acc = 0;
          for (int j = 0; j < n.S2; ++j) acc += w[j] / total * v[(g * n.S2 + j) * n.Dv + d];
          out[((b * n.NH + h) * n.S + i) * n.Dv + d] = acc;
        }
      }
  return out;
}

TEST(InterpreterSdpa, MasksCausalGqaAndRowsWithoutKeys) {
  const SdpaSizes n{2, 4, 2, 3, 5, 4, 3};
  const std::string text = module_text(
      "(%q: f32[2, 4, 3, 4], %k: f32[2, 2, 5, 4], %v: f32[2, 2, 5, 3], %bm: bool[3, 5], %fm: f32[2, 1, 3, 5], "
      "%q2: f32[2, 2, 3, 4]) -> (f32[2, 4, 3, 3], f32[2, 4, 3, 3], f32[2, 4, 3, 3], f32[2, 2, 3, 3])",
      R"(
    %bool = sdpa(%q, %k, %v, %bm) {scale = 0.5, gqa = 1} : f32[2, 4, 3, 3]
    %float = sdpa(%q, %k, %v, %fm) {scale = 0.5, gqa = 1} : f32[2, 4, 3, 3]
    %causal = sdpa(%q, %k, %v) {scale = 0.5, gqa = 1, causal = 1} : f32[2, 4, 3, 3]
    %plain = sdpa(%q2, %k, %v) {scale = 0.5} : f32[2, 2, 3, 3]
    return %bool, %float, %causal, %plain)");
  const auto q = random_values(1, 2 * 4 * 3 * 4, 2), k = random_values(2, 2 * 2 * 5 * 4, 2);
  const auto v = random_values(3, 2 * 2 * 5 * 3), q2 = random_values(4, 2 * 2 * 3 * 4, 2);
  const std::vector<int32_t> keep = {1, 0, 1, 1, 0,   // query 0 keeps keys 0, 2, 3
                                     0, 0, 0, 0, 0,   // query 1 keeps none: NaN
                                     0, 0, 0, 0, 1};  // query 2 keeps key 4
  std::vector<float> bias = random_values(5, 2 * 3 * 5);
  bias[2] = -INFINITY;                                                 // batch 0, query 0 drops key 2
  for (int j = 0; j < 5; ++j) bias[(1 * 3 + 2) * 5 + j] = -INFINITY;  // batch 1, query 2: every key -inf
  const auto out = run_ok(text, {f32({2, 4, 3, 4}, q), f32({2, 2, 5, 4}, k), f32({2, 2, 5, 3}, v),
                                 boolean({3, 5}, keep), f32({2, 1, 3, 5}, bias), f32({2, 2, 3, 4}, q2)});
  ASSERT_EQ(out.size(), 4u);
  constexpr double kDrop = -INFINITY;
  expect_close(out[0].f32, naive_sdpa(n, q, k, v, 0.5, [&](int, int, int i, int j) { return keep[i * 5 + j] ? 0 : kDrop; }),
               1e-6);
  expect_close(out[1].f32, naive_sdpa(n, q, k, v, 0.5, [&](int b, int, int i, int j) { return bias[(b * 3 + i) * 5 + j]; }),
               1e-6);
  expect_close(out[2].f32, naive_sdpa(n, q, k, v, 0.5, [](int, int, int i, int j) { return j <= i ? 0 : kDrop; }), 1e-6);
  expect_close(out[3].f32, naive_sdpa({2, 2, 2, 3, 5, 4, 3}, q2, k, v, 0.5, [](int, int, int, int) { return 0.0; }),
               1e-6);
  // The rows with no key are NaN, every other row is finite.
  for (size_t e = 0; e < out[0].f32.size(); ++e) EXPECT_EQ(std::isnan(out[0].f32[e]), e / 3 % 3 == 1) << e;
  for (size_t e = 0; e < out[1].f32.size(); ++e) EXPECT_EQ(std::isnan(out[1].f32[e]), e >= 36 && e / 3 % 3 == 2) << e;
}

// Sizes large enough that sdpa and layer_norm split across threads give the serial result exactly.
TEST(InterpreterSdpa, ThreadSplitsMatchSerialBitForBit) {
  const std::string text = module_text(
      "(%q: f32[2, 8, 32, 32], %k: f32[2, 2, 64, 32], %v: f32[2, 2, 64, 32], %m: f32[32, 64], %x: f32[2048, 32]) -> "
      "(f32[2, 8, 32, 32], f32[2048, 32])",
      R"(
    %o = sdpa(%q, %k, %v, %m) {scale = 0.17, gqa = 1, causal = 1} : f32[2, 8, 32, 32]
    %n = layer_norm(%x) {eps = 1e-05} : f32[2048, 32]
    return %o, %n)");
  const std::vector<HostTensor> args = {f32({2, 8, 32, 32}, random_values(70, 2 * 8 * 32 * 32)),
                                        f32({2, 2, 64, 32}, random_values(71, 2 * 2 * 64 * 32)),
                                        f32({2, 2, 64, 32}, random_values(72, 2 * 2 * 64 * 32)),
                                        f32({32, 64}, random_values(73, 32 * 64)),
                                        f32({2048, 32}, random_values(74, 2048 * 32, 3))};
  const auto serial = run_ok(text, args, {}, {8, 1});
  const auto split = run_ok(text, args, {}, {8, 3});
  ASSERT_EQ(serial.size(), 2u);
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(serial[0].f32, split[0].f32);
  EXPECT_EQ(serial[1].f32, split[1].f32);
}

TEST(InterpreterState, IndexCopyWritesRowsAndChecksIndices) {
  Interpreter interpreter(parse_ok(module_text("(%src: f32[T, 2, 2], %idx: i32[T]) -> (f32[L, 2, 2])", R"(
    %s = index_copy(%src, %idx) {state = "kv", axis = 0} : f32[L, 2, 2]
    return %s)",
                                               "state @kv : f32[L, 2, 2]\n")),
                          {}, {8, 2});
  auto out = interpreter.run("f", {f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), i32({2}, {5, 1})});
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  std::vector<float> expected(8 * 4, 0.0f);
  std::copy_n(std::vector<float>{1, 2, 3, 4}.begin(), 4, expected.begin() + 5 * 4);
  std::copy_n(std::vector<float>{5, 6, 7, 8}.begin(), 4, expected.begin() + 1 * 4);
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{8, 2, 2}));
  EXPECT_EQ((*out)[0].f32, expected);  // the whole state
  EXPECT_EQ(*interpreter.state("kv"), expected);

  auto bad = interpreter.run("f", {f32({2, 2, 2}, {9, 9, 9, 9, 9, 9, 9, 9}), i32({2}, {0, 8})});
  ASSERT_FALSE(bad.has_value());
  const std::string message = bad.status().message();
  EXPECT_TRUE(contains(message, "node %s (index_copy)") && contains(message, "index 8 at position 1") &&
              contains(message, "state kv"))
      << message;
  EXPECT_EQ(*interpreter.state("kv"), expected);  // nothing written: every index is checked first

  // Along the KV axis (-2): src is the state with that dim replaced by the index count.
  Interpreter heads(parse_ok(module_text("(%src: f32[L, 1, 2], %idx: i32[1]) -> (f32[L, 2, 2])", R"(
    %s = index_copy(%src, %idx) {state = "kv", axis = -2} : f32[L, 2, 2]
    return %s)",
                                         "state @kv : f32[L, 2, 2]\n")),
                    {}, {4, 1});
  auto by_head = heads.run("f", {f32({4, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), i32({1}, {1})});
  ASSERT_TRUE(by_head.has_value()) << by_head.status().to_string();
  EXPECT_EQ((*by_head)[0].f32, (std::vector<float>{0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 7, 8}));
}

TEST(InterpreterRope, InvFreqListEqualsThetaFormAndScaleMultiplies) {
  kernels::RopeParams params;
  params.theta = 10000.0;
  std::string table;
  for (float f : kernels::rope_inv_freq(params, 8)) table += (table.empty() ? "" : ", ") + attr_to_string(double{f});
  const std::string text = module_text("(%x: f32[T, 2, 8], %pos: i32[]) -> (f32[T, 2, 8], f32[T, 2, 8], f32[T, 2, 8])",
                                       R"(
    %a = rope(%x, %pos) {theta = 10000.0} : f32[T, 2, 8]
    %b = rope(%x, %pos) {inv_freq = [)" + table + R"(]} : f32[T, 2, 8]
    %c = rope(%x, %pos) {inv_freq = [)" + table + R"(], scale = 2.0} : f32[T, 2, 8]
    return %a, %b, %c)");
  const auto x = random_values(6, 3 * 2 * 8);
  const auto out = run_ok(text, {f32({3, 2, 8}, x), HostTensor::scalar_i32(4)});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].f32, out[1].f32);
  std::vector<float> doubled = out[0].f32;
  for (float& value : doubled) value *= 2;  // scaling cos and sin by 2 is exact
  EXPECT_EQ(out[2].f32, doubled);
  double moved = 0;  // position 4 rotates: the test would catch rope being skipped
  for (size_t i = 0; i < x.size(); ++i) moved = std::max(moved, std::abs(static_cast<double>(out[0].f32[i]) - x[i]));
  EXPECT_GT(moved, 0.1);
}

// A cache of keys/values written by attention-style functions; `captured` writes it as a captured
// graph does (index_copy at pos + arange(T), sdpa over the whole cache with the bool mask
// arange(L) <= pos + arange(T), and > pos + arange(T) - window for a sliding window).
std::string cache_attention(bool captured, int window) {
  const std::string decls = "state @k : f32[L, 2, 4]\nstate @v : f32[L, 2, 4]\n";
  const std::string signature = "(%q: f32[T, 4, 4], %kn: f32[T, 2, 4], %vn: f32[T, 2, 4], %pos: i32[]) -> (f32[T, 4, 4])";
  if (!captured)
    return module_text(signature, R"(
    %kc = kv_append(%kn, %pos) {state = "k"} : f32[L, 2, 4]
    %vc = kv_append(%vn, %pos) {state = "v"} : f32[L, 2, 4]
    %o = attention(%q, %kc, %vc, %pos) {scale = 0.5, window = )" + std::to_string(window) + R"(} : f32[T, 4, 4]
    return %o)",
                       decls);
  std::string mask = "%keep = le(%kr, %qr) : bool[T, L]";
  if (window > 0)
    mask = "%causal = le(%kr, %qr) : bool[T, L]\n%w = constant {dtype = \"i32\", shape = [], value = " +
           std::to_string(window) + "} : i32[]\n%lo = sub(%qr, %w) : i32[T, 1]\n%after = gt(%kr, %lo) : bool[T, L]\n" +
           "%keep = logical_and(%causal, %after) : bool[T, L]";
  return module_text(signature, R"(
    %t = arange {dtype = "i32", start = 0, step = 1, length = [T]} : i32[T]
    %rows = add(%t, %pos) : i32[T]
    %kc = index_copy(%kn, %rows) {state = "k", axis = 0} : f32[L, 2, 4]
    %vc = index_copy(%vn, %rows) {state = "v", axis = 0} : f32[L, 2, 4]
    %qt = transpose(%q) {perm = [1, 0, 2]} : f32[4, T, 4]
    %q4 = reshape(%qt) {shape = [1, 4, T, 4]} : f32[1, 4, T, 4]
    %kt = transpose(%kc) {perm = [1, 0, 2]} : f32[2, L, 4]
    %k4 = reshape(%kt) {shape = [1, 2, L, 4]} : f32[1, 2, L, 4]
    %vt = transpose(%vc) {perm = [1, 0, 2]} : f32[2, L, 4]
    %v4 = reshape(%vt) {shape = [1, 2, L, 4]} : f32[1, 2, L, 4]
    %keys = arange {dtype = "i32", start = 0, step = 1, length = [L]} : i32[L]
    %kr = reshape(%keys) {shape = [1, L]} : i32[1, L]
    %qr = reshape(%rows) {shape = [T, 1]} : i32[T, 1]
    )" + mask + R"(
    %o4 = sdpa(%q4, %k4, %v4, %keep) {scale = 0.5, gqa = 1} : f32[1, 4, T, 4]
    %o3 = reshape(%o4) {shape = [4, T, 4]} : f32[4, T, 4]
    %o = transpose(%o3) {perm = [1, 0, 2]} : f32[T, 4, 4]
    return %o)",
                     decls);
}

// Prefill of 5 tokens, then decode steps of 1 and 2 tokens, through both forms of cached attention.
TEST(InterpreterComposites, SdpaWithCacheMaskEqualsAttention) {
  for (int window : {0, 3}) {
    SCOPED_TRACE("window " + std::to_string(window));
    Interpreter semantic(parse_ok(cache_attention(false, window)), {}, {8, 2});
    Interpreter captured(parse_ok(cache_attention(true, window)), {}, {8, 2});
    int pos = 0;
    for (int T : {5, 1, 2}) {
      const std::vector<HostTensor> args = {f32({T, 4, 4}, random_values(10 + pos, T * 16, 2)),
                                            f32({T, 2, 4}, random_values(20 + pos, T * 8)),
                                            f32({T, 2, 4}, random_values(30 + pos, T * 8)),
                                            HostTensor::scalar_i32(pos)};
      auto expected = semantic.run("f", args);
      auto actual = captured.run("f", args);
      ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
      ASSERT_TRUE(actual.has_value()) << actual.status().to_string();
      expect_relative((*actual)[0].f32, (*expected)[0].f32, 1e-6);
      pos += T;
    }
  }
}

// attention with a window against a double-precision reference: query t sees keys pos+t-w+1 .. pos+t.
TEST(InterpreterAttention, WindowLimitsTheKeys) {
  constexpr int kWindow = 3;
  Interpreter interpreter(parse_ok(cache_attention(false, kWindow)), {}, {8, 2});
  const auto k = random_values(40, 7 * 8), v = random_values(41, 7 * 8), q = random_values(42, 5 * 16, 2);
  auto rows = [](const std::vector<float>& all, int from, int count, int width) {
    return std::vector<float>(all.begin() + from * width, all.begin() + (from + count) * width);
  };
  ASSERT_TRUE(interpreter
                  .run("f", {f32({2, 4, 4}, std::vector<float>(32, 0.0f)), f32({2, 2, 4}, rows(k, 0, 2, 8)),
                             f32({2, 2, 4}, rows(v, 0, 2, 8)), HostTensor::scalar_i32(0)})
                  .has_value());
  auto out = interpreter.run("f", {f32({5, 4, 4}, q), f32({5, 2, 4}, rows(k, 2, 5, 8)), f32({5, 2, 4}, rows(v, 2, 5, 8)),
                                   HostTensor::scalar_i32(2)});
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  // Queries at positions 2..6 over cache rows 0..6, laid out as sdpa's [1, NH, T, D] / [1, KV, L, D].
  std::vector<float> qh(5 * 16), kh(7 * 8), vh(7 * 8);
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < 4; ++h)
      for (int d = 0; d < 4; ++d) qh[(h * 5 + t) * 4 + d] = q[(t * 4 + h) * 4 + d];
  for (int j = 0; j < 7; ++j)
    for (int g = 0; g < 2; ++g)
      for (int d = 0; d < 4; ++d) {
        kh[(g * 7 + j) * 4 + d] = k[(j * 2 + g) * 4 + d];
        vh[(g * 7 + j) * 4 + d] = v[(j * 2 + g) * 4 + d];
      }
  const auto reference = naive_sdpa({1, 4, 2, 5, 7, 4, 4}, qh, kh, vh, 0.5, [](int, int, int t, int j) {
    const int position = 2 + t;
    return j <= position && j > position - kWindow ? 0.0 : -INFINITY;
  });
  std::vector<double> expected(5 * 16);
  for (int t = 0; t < 5; ++t)
    for (int h = 0; h < 4; ++h)
      for (int d = 0; d < 4; ++d) expected[(t * 4 + h) * 4 + d] = reference[(h * 5 + t) * 4 + d];
  expect_close((*out)[0].f32, expected, 1e-6);
}

TEST(InterpreterWeights, AliasRowsComeFromTheSourceLoadedOnce) {
  const std::string text = module_text("(%x: f32[T, 3]) -> (f32[T, 2], f32[T, 1], f32[4, 3], f32[2, 3])", R"(
    %k = weight {name = "wk"} : f32[2, 3]
    %q = weight {name = "wq"} : f32[1, 3]
    %w = weight {name = "w"} : f32[4, 3]
    %yk = linear(%x, %k) : f32[T, 2]
    %yq = linear(%x, %q) : f32[T, 1]
    return %yk, %yq, %w, %k)",
                                       "param @w : f32[4, 3]\nparam @wk : f32[2, 3] alias @w row 2\n"
                                       "param @wq : f32[1, 3] alias @w row 0\n");
  std::map<std::string, int> asked;
  WeightLoader loader = [&](const std::string& name, std::vector<float>& out) {
    ++asked[name];
    if (name != "w") return error(ErrorCode::kNotFound, "no tensor " + name);
    out = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    return Status::ok();
  };
  Interpreter interpreter(parse_ok(text), loader, {8, 2});
  for (int call = 0; call < 2; ++call) {
    auto out = interpreter.run("f", {f32({2, 3}, {1, 0, 0, 0, 1, 1})});
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    EXPECT_EQ((*out)[0].f32, (std::vector<float>{7, 10, 17, 23}));
    EXPECT_EQ((*out)[1].f32, (std::vector<float>{1, 5}));
    EXPECT_EQ((*out)[2].f32, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
    EXPECT_EQ((*out)[3].f32, (std::vector<float>{7, 8, 9, 10, 11, 12}));
  }
  EXPECT_EQ(asked, (std::map<std::string, int>{{"w", 1}}));

  // An unverified module whose alias runs past its source is refused, not read out of bounds.
  auto bad = parse_module(module_text("() -> (f32[3, 3])", "%k = weight {name = \"wk\"} : f32[3, 3]\nreturn %k",
                                      "param @w : f32[4, 3]\nparam @wk : f32[3, 3] alias @w row 2\n"));
  ASSERT_TRUE(bad.has_value()) << bad.status().to_string();
  Interpreter refusing(*bad, loader, {8, 2});
  auto refused = refusing.run("f", {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_TRUE(contains(refused.status().message(), "does not fit")) << refused.status().message();
}

TEST(InterpreterComposites, RmsNormDecompositionEqualsRmsNorm) {
  const std::string text = module_text("(%x: bf16[T, 64]) -> (bf16[T, 64], bf16[T, 64])", R"(
    %w = weight {name = "g"} : bf16[64]
    %ref = rmsnorm(%x, %w) {eps = 1e-06} : bf16[T, 64]
    %xf = cast(%x) {dtype = "f32"} : f32[T, 64]
    %two = constant {dtype = "f32", shape = [], value = 2.0} : f32[]
    %sq = pow(%xf, %two) : f32[T, 64]
    %var = reduce_mean(%sq) {axis = -1, keepdim = 1} : f32[T, 1]
    %eps = constant {dtype = "f32", shape = [], value = 1e-06} : f32[]
    %ve = add(%var, %eps) : f32[T, 1]
    %inv = rsqrt(%ve) : f32[T, 1]
    %xn = mul(%xf, %inv) : f32[T, 64]
    %back = cast(%xn) {dtype = "bf16"} : bf16[T, 64]
    %out = mul(%w, %back) : bf16[T, 64]
    return %ref, %out)",
                                       "param @g : bf16[64]\n");
  const auto g = random_values(50, 64);
  WeightLoader loader = [&](const std::string&, std::vector<float>& out) {
    out = g;
    return Status::ok();
  };
  for (float scale : {0.01f, 1.0f, 30.0f}) {
    const auto out = run_ok(text, {f32({7, 64}, random_values(51, 7 * 64, scale))}, loader);
    ASSERT_EQ(out.size(), 2u);
    expect_relative(out[1].f32, out[0].f32, 1e-6);
  }
}

TEST(InterpreterComposites, SoftmaxDecompositionEqualsSoftmax) {
  const std::string text = module_text("(%x: f32[T, 16]) -> (f32[T, 16], f32[T, 16])", R"(
    %ref = softmax(%x) {axis = -1} : f32[T, 16]
    %m = reduce_max(%x) {axis = -1, keepdim = 1} : f32[T, 1]
    %d = sub(%x, %m) : f32[T, 16]
    %e = exp(%d) : f32[T, 16]
    %s = reduce_sum(%e) {axis = -1, keepdim = 1} : f32[T, 1]
    %out = div(%e, %s) : f32[T, 16]
    return %ref, %out)");
  for (float scale : {0.1f, 4.0f}) {
    const auto out = run_ok(text, {f32({9, 16}, random_values(60, 9 * 16, scale))});
    ASSERT_EQ(out.size(), 2u);
    expect_relative(out[1].f32, out[0].f32, 1e-6);
  }
}

}  // namespace
}  // namespace agentcompile::ir
