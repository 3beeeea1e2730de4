// Host test data: draws that do not depend on the thread count, rounding that matches the bytes, and
// a comparison that finds a single wrong or NaN element wherever it sits (chunk boundaries included)
// and reads the same from dtype bytes as from decoded values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/dtype.h"
#include "tune/host_data.h"

namespace agentcompile::tune {
namespace {

constexpr int64_t kChunk = int64_t{1} << 20;  // host_data.cpp's chunk

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(HostData, ParallelDrawEqualsSerialDraw) {
  const std::vector<int64_t> shape = {5, kChunk / 2 + 3};  // two and a half chunks, the last one short
  for (ir::DType dtype : {ir::DType::kBF16, ir::DType::kF16, ir::DType::kF32, ir::DType::kI32}) {
    for (Distribution distribution : {Distribution::kNormal, Distribution::kUniform, Distribution::kHeavyTailed}) {
      SCOPED_TRACE(std::string(ir::dtype_name(dtype)) + " " + distribution_name(distribution));
      TestTensor serial, parallel;
      {
        ScopedHostThreads one(1);
        serial = random_tensor(dtype, shape, distribution, 7, 0.5f, 1000);
      }
      {
        ScopedHostThreads three(3);
        parallel = random_tensor(dtype, shape, distribution, 7, 0.5f, 1000);
      }
      EXPECT_TRUE(same_bits(serial.values, parallel.values));
      EXPECT_EQ(serial.bytes, parallel.bytes);
      EXPECT_TRUE(same_bits(serial.values, decode_values(dtype, serial.bytes))) << "values must be what the bytes hold";
      // Chunks have streams of their own: the second chunk does not repeat the first, shifted or not.
      if (ir::is_float(dtype))
        for (int64_t shift = -4; shift <= 4; ++shift) {
          int64_t equal = 0;
          for (int64_t i = 8; i < 4096; ++i) equal += serial.values[i] == serial.values[kChunk + i + shift];
          EXPECT_LT(equal, 400) << "chunk 1 repeats chunk 0 shifted by " << shift;
        }
    }
  }
}

TEST(HostData, DistributionsHaveTheirMoments) {
  const int64_t n = 1 << 20;
  const TestTensor normal = random_tensor(ir::DType::kF32, {n}, Distribution::kNormal, 3);
  double sum = 0, squares = 0;
  for (float v : normal.values) {
    sum += v;
    squares += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(squares / n, 1.0, 0.01);
  const TestTensor uniform = random_tensor(ir::DType::kF32, {n}, Distribution::kUniform, 3);
  double uniform_squares = 0;
  for (float v : uniform.values) {
    EXPECT_LT(std::fabs(v), 1.0f);
    uniform_squares += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(uniform_squares / n, 1.0 / 3.0, 0.01);
  const TestTensor heavy = random_tensor(ir::DType::kF32, {n}, Distribution::kHeavyTailed, 3);
  int64_t beyond_five = 0, normal_beyond_five = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_LE(std::fabs(heavy.values[i]), 30.0f);
    beyond_five += std::fabs(heavy.values[i]) > 5.0f;
    normal_beyond_five += std::fabs(normal.values[i]) > 5.0f;
  }
  EXPECT_GT(beyond_five, 1000) << "Student-t(3) puts about 1.5% of its mass beyond 5";
  EXPECT_LT(normal_beyond_five, 5);
  // Different seeds, different draws.
  EXPECT_FALSE(same_bits(normal.values, random_tensor(ir::DType::kF32, {n}, Distribution::kNormal, 4).values));
}

// The normal draw's histogram against the normal distribution, tails included: a chi-square over 18
// bins (its 99.99% point is 45 for 17 degrees of freedom; a wrong layer of the ziggurat gives
// thousands).
TEST(HostData, NormalDrawsFollowTheNormalDistribution) {
  const int64_t n = int64_t{1} << 22;
  const TestTensor t = random_tensor(ir::DType::kF32, {n}, Distribution::kNormal, 5);
  std::vector<double> edges = {-1e9};
  for (double e = -4.0; e <= 4.0 + 1e-9; e += 0.5) edges.push_back(e);
  edges.push_back(1e9);
  std::vector<int64_t> counts(edges.size() - 1, 0);
  for (float v : t.values)
    for (size_t b = 0; b + 1 < edges.size(); ++b)
      if (v >= edges[b] && v < edges[b + 1]) {
        ++counts[b];
        break;
      }
  auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  double chi_square = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    const double expected = static_cast<double>(n) * (cdf(edges[b + 1]) - cdf(edges[b]));
    chi_square += (static_cast<double>(counts[b]) - expected) * (static_cast<double>(counts[b]) - expected) / expected;
  }
  EXPECT_LT(chi_square, 45.0);
}

TEST(HostData, HalfDecodeMatchesTheConversionForEveryValue) {
  std::vector<uint8_t> bytes(65536 * 2);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(&bytes[2 * bits], &b, 2);
  }
  const std::vector<float> values = decode_values(ir::DType::kF16, bytes);
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const float expected = ir::half_to_float(static_cast<uint16_t>(bits));
    ASSERT_EQ(std::memcmp(&values[bits], &expected, sizeof(float)), 0) << "f16 bits " << bits;
  }
}

// A reference and a correct output of three chunks and a bit, in `dtype`.
struct Pair {
  TestTensor ref;
  std::vector<float> out;
};
Pair pair_of(ir::DType dtype) {
  Pair p;
  p.ref = random_tensor(dtype, {3 * kChunk + 17}, Distribution::kNormal, 11);
  p.out = p.ref.values;
  return p;
}

std::vector<uint8_t> encoded(ir::DType dtype, const std::vector<float>& values) { return tensor_from_values(dtype, {}, values).bytes; }

TEST(HostData, CompareFindsOneWrongElementAtEveryChunkBoundary) {
  for (ir::DType dtype : {ir::DType::kBF16, ir::DType::kF16, ir::DType::kF32}) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    const Pair p = pair_of(dtype);
    EXPECT_TRUE(compare(p.out, p.ref.values, dtype).ok);
    EXPECT_TRUE(compare_encoded(encoded(dtype, p.out), p.ref.values, dtype).ok);
    const size_t last = p.out.size() - 1;
    for (size_t at : {size_t{0}, size_t(kChunk - 1), size_t(kChunk), size_t(2 * kChunk), size_t(3 * kChunk), last}) {
      SCOPED_TRACE("element " + std::to_string(at));
      std::vector<float> wrong = p.out;
      wrong[at] += 1.0f;  // far above every tolerance: the values are O(1)
      const Comparison by_values = compare(wrong, p.ref.values, dtype);
      const Comparison by_bytes = compare_encoded(encoded(dtype, wrong), p.ref.values, dtype);
      for (const Comparison& c : {by_values, by_bytes}) {
        EXPECT_FALSE(c.ok);
        EXPECT_EQ(c.mismatches, 1);
        EXPECT_EQ(c.nan_count, 0);
        EXPECT_NEAR(c.max_abs_error, 1.0, 0.02);
        EXPECT_NE(c.reason.find("wrong numbers"), std::string::npos) << c.reason;
      }
      std::vector<float> poisoned = p.out;
      poisoned[at] = std::numeric_limits<float>::quiet_NaN();
      for (const Comparison& c : {compare(poisoned, p.ref.values, dtype), compare_encoded(encoded(dtype, poisoned), p.ref.values, dtype)}) {
        EXPECT_FALSE(c.ok);
        EXPECT_EQ(c.nan_count, 1);
        EXPECT_EQ(c.mismatches, 0);
        EXPECT_NE(c.reason.find("NaN"), std::string::npos) << c.reason;
      }
    }
  }
}

TEST(HostData, CompareDoesNotDependOnTheThreadCount) {
  const ir::DType dtype = ir::DType::kBF16;
  const Pair p = pair_of(dtype);
  std::vector<float> out = p.out;
  for (size_t i = 0; i < out.size(); i += 100003) out[i] *= 1.5f;  // errors in every chunk, most over tolerance
  const std::vector<uint8_t> bytes = encoded(dtype, out);
  Comparison serial, parallel;
  {
    ScopedHostThreads one(1);
    serial = compare_encoded(bytes, p.ref.values, dtype);
  }
  {
    ScopedHostThreads four(4);
    parallel = compare_encoded(bytes, p.ref.values, dtype);
  }
  EXPECT_GT(serial.mismatches, 0);
  EXPECT_EQ(serial.mismatches, parallel.mismatches);
  EXPECT_EQ(serial.max_abs_error, parallel.max_abs_error);
  EXPECT_EQ(serial.max_rel_error, parallel.max_rel_error);
  EXPECT_EQ(serial.reason, parallel.reason);
}

TEST(HostData, CompareRejectsAShortOutputAndHoldsToThePrecision) {
  const Pair p = pair_of(ir::DType::kF32);
  std::vector<float> shorter(p.out.begin(), p.out.end() - 1);
  EXPECT_NE(compare(shorter, p.ref.values, ir::DType::kF32).reason.find("elements"), std::string::npos);
  EXPECT_NE(compare_encoded(encoded(ir::DType::kF32, shorter), p.ref.values, ir::DType::kF32).reason.find("elements"), std::string::npos);
  // An f32 output off by 1e-3 of its largest value: wrong at f32's tolerance, right where the region
  // computed through bf16.
  double ref_max = 0;
  for (float r : p.ref.values) ref_max = std::max(ref_max, static_cast<double>(std::fabs(r)));
  std::vector<float> off = p.out;
  off[5] += static_cast<float>(1e-3 * ref_max);
  EXPECT_FALSE(compare(off, p.ref.values, ir::DType::kF32).ok);
  EXPECT_TRUE(compare(off, p.ref.values, ir::DType::kF32, ir::DType::kBF16).ok);
  EXPECT_TRUE(compare_encoded(encoded(ir::DType::kF32, off), p.ref.values, ir::DType::kF32, ir::DType::kBF16).ok);
}

}  // namespace
}  // namespace agentcompile::tune
