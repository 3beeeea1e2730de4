// The interpreter splits large pointwise, layout and row loops over its thread pool (a KernelBench
// input holds up to 2^31 elements): the results must be bitwise those of one thread, on tensors large
// enough to take the parallel path (over a million elements), for every loop shape that splits:
// same-shape and broadcast binaries, unary math, transposes, strided and contiguous row reductions,
// softmax (its per-thread buffer) and scans.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "interpreter_ir.h"

namespace agentcompile::ir {
namespace {

using ir_test::f32;
using ir_test::run_ok;

constexpr const char* kModule = R"(module parallel {
  func @f(%x: f32[32, 96, 512], %b: f32[96, 1, 1]) -> (f32[96, 32, 512], f32[96, 512], f32[96, 32, 512], f32[96, 32], f32[96, 32, 512], f32[96, 32, 512]) {
    %t = transpose(%x) {perm = [1, 0, 2]} : f32[96, 32, 512]
    %a = add(%t, %b) : f32[96, 32, 512]
    %e = exp(%a) : f32[96, 32, 512]
    %m = mul(%e, %t) : f32[96, 32, 512]
    %s = reduce_sum(%m) {axis = 1, keepdim = 0} : f32[96, 512]
    %sm = softmax(%a) {axis = 2} : f32[96, 32, 512]
    %mx = reduce_max(%a) {axis = 2, keepdim = 0} : f32[96, 32]
    %c = cumsum(%a) {axis = 1} : f32[96, 32, 512]
    %w = broadcast(%b) {shape = [96, 32, 512]} : f32[96, 32, 512]
    return %m, %s, %sm, %mx, %c, %w
  }
})";

std::vector<HostTensor> inputs() {
  std::vector<float> x(32 * 96 * 512), b(96);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.f - 1.f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i) / 96.f - 0.5f;
  return {f32({32, 96, 512}, x), f32({96, 1, 1}, b)};
}

TEST(InterpreterParallel, LargeLoopsGiveTheSingleThreadResultBitForBit) {
  const auto serial = run_ok(kModule, inputs(), {}, InterpreterOptions{8, 1});
  const auto parallel = run_ok(kModule, inputs(), {}, InterpreterOptions{8, 4});
  ASSERT_EQ(serial.size(), 6u);
  ASSERT_EQ(parallel.size(), serial.size());
  for (size_t o = 0; o < serial.size(); ++o) {
    ASSERT_EQ(parallel[o].shape, serial[o].shape) << "output " << o;
    ASSERT_EQ(parallel[o].f32.size(), serial[o].f32.size()) << "output " << o;
    EXPECT_EQ(std::memcmp(parallel[o].f32.data(), serial[o].f32.data(), serial[o].f32.size() * sizeof(float)), 0)
        << "output " << o << " differs between 1 and 4 threads";
  }
}

// A few values checked by hand, so a loop that splits wrongly in both runs alike is caught too: the
// chunk boundaries (every 2^18 elements) fall inside rows of every output.
TEST(InterpreterParallel, ChunkBoundariesIndexTheRightElements) {
  const auto in = inputs();
  const auto& x = in[0].f32;
  const auto& b = in[1].f32;
  const auto out = run_ok(kModule, in, {}, InterpreterOptions{8, 4});
  ASSERT_EQ(out.size(), 6u);
  auto xv = [&](int64_t i, int64_t h, int64_t k) { return x[static_cast<size_t>((i * 96 + h) * 512 + k)]; };
  for (int64_t flat : {int64_t{0}, int64_t{262143}, int64_t{262144}, int64_t{1000001}, int64_t{96 * 32 * 512 - 1}}) {
    const int64_t h = flat / (32 * 512), i = (flat / 512) % 32, k = flat % 512;
    const float a = xv(i, h, k) + b[static_cast<size_t>(h)];
    EXPECT_FLOAT_EQ(out[0].f32[static_cast<size_t>(flat)], std::exp(a) * xv(i, h, k)) << "mul at " << flat;
    EXPECT_EQ(out[5].f32[static_cast<size_t>(flat)], b[static_cast<size_t>(h)]) << "broadcast at " << flat;
    float running = 0.f;
    double cumulative = 0.0;
    for (int64_t r = 0; r <= i; ++r) cumulative += xv(r, h, k) + b[static_cast<size_t>(h)];
    running = static_cast<float>(cumulative);
    EXPECT_NEAR(out[4].f32[static_cast<size_t>(flat)], running, 1e-4) << "cumsum at " << flat;
  }
  for (int64_t h : {0, 47, 95})
    for (int64_t k : {0, 255, 511}) {
      double total = 0.0;
      for (int64_t i = 0; i < 32; ++i) {
        const float t = xv(i, h, k);
        total += static_cast<double>(std::exp(t + b[static_cast<size_t>(h)]) * t);
      }
      EXPECT_NEAR(out[1].f32[static_cast<size_t>(h * 512 + k)], total, 1e-3 * std::max(1.0, std::abs(total))) << h << ", " << k;
    }
}

// Strided reductions (inner > 1) run a block of neighbouring columns at once (interpreter_rows.cpp):
// every column must be exactly the row-by-row definition (double accumulation in j order; max/min
// propagating the first NaN), also in a partial last block (700 = 512 + 188) and with NaNs present.
TEST(InterpreterParallel, ColumnReductionsAreTheRowByRowDefinition) {
  constexpr int64_t O = 3, N = 300, I = 700;
  std::vector<float> x(O * N * I);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.f - 1.f + 1e-3f;
  x[1 * N * I + 5 * I + 600] = std::nanf("");  // column (1, 600) holds a NaN at j = 5
  const char* ops[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"};
  for (const char* op : ops) {
    const std::string module = std::string("module cols {\n  func @f(%x: f32[3, 300, 700]) -> (f32[3, 700]) {\n    %r = ") + op +
                               "(%x) {axis = 1, keepdim = 0} : f32[3, 700]\n    return %r\n  }\n}\n";
    const auto out = run_ok(module, {f32({O, N, I}, x)}, {}, InterpreterOptions{8, 4});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < I; ++i) {
        const std::string name(op);
        float want;
        if (name == "reduce_max" || name == "reduce_min") {
          float best = x[o * N * I + i];
          for (int64_t j = 1; j < N && !std::isnan(best); ++j) {
            const float v = x[o * N * I + j * I + i];
            if (std::isnan(v) || (name == "reduce_max" ? v > best : v < best)) best = v;
          }
          want = best;
        } else {
          double total = name == "reduce_prod" ? 1.0 : 0.0;
          for (int64_t j = 0; j < N; ++j) total = name == "reduce_prod" ? total * x[o * N * I + j * I + i] : total + x[o * N * I + j * I + i];
          want = static_cast<float>(name == "reduce_mean" ? total / N : total);
        }
        const float got = out[0].f32[static_cast<size_t>(o * I + i)];
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(got)) << op << " column (" << o << ", " << i << ")";
        } else {
          ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << op << " column (" << o << ", " << i << "): " << got << " vs " << want;
        }
      }
  }
}

}  // namespace
}  // namespace agentcompile::ir
