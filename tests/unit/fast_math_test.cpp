// src/kernels/fast_math.cuh on the CPU: the polynomial and algebraic parts of the short forms (the
// SFU's ex2.approx and fast division are library calls here) against double precision over a grid that
// crosses every branch, with the error bounds the header states. On the GPU the fast
// candidates are validated against the reference interpreter like every other.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kernels/fast_math.cuh"

namespace agentcompile {
namespace {

struct Worst {
  double error = 0;
  float at = 0;
};

// The largest error of `fast` against `exact` over [lo, hi] in `steps` steps, in units of
// relative * |exact|; <= 1 passes.
Worst worst_error(const std::function<float(float)>& fast, const std::function<double(double)>& exact, float lo, float hi, int steps,
                  double relative) {
  Worst w;
  for (int i = 0; i <= steps; ++i) {
    const float x = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(steps);
    const double want = exact(x);
    const double error = std::fabs(static_cast<double>(fast(x)) - want) / (relative * std::fabs(want) + 1e-38);
    if (error > w.error) w = {error, x};
  }
  return w;
}

TEST(FastMath, Expm1IsRelativelyExactNearZeroAndFarFromIt) {
  const Worst near = worst_error(ac::expm1_fast, [](double x) { return std::expm1(x); }, -0.5f, 0.5f, 100001, 2e-7);
  EXPECT_LE(near.error, 1.0) << "at " << near.at;
  const Worst far = worst_error(ac::expm1_fast, [](double x) { return std::expm1(x); }, -30.f, 30.f, 100001, 1e-6);
  EXPECT_LE(far.error, 1.0) << "at " << far.at;
  EXPECT_EQ(ac::expm1_fast(0.f), 0.f);
  EXPECT_EQ(ac::expm1_fast(-100.f), -1.f);
}

TEST(FastMath, SigmoidIsRelativelyExactOnBothTails) {
  const Worst s = worst_error(ac::sigmoid_fast, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -80.f, 80.f, 400001, 1e-6);
  EXPECT_LE(s.error, 1.0) << "at " << s.at;
  EXPECT_EQ(ac::sigmoid_fast(0.f), 0.5f);
  EXPECT_EQ(ac::sigmoid_fast(200.f), 1.f);
}

}  // namespace
}  // namespace agentcompile
