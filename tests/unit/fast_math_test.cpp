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
  // The polynomial inside |x| < 1/32; outside, exp(x) - 1, whose error here is the host expf's (on the GPU
  // ex2.approx's ~2.4e-7 of exp, ~1e-5 of expm1 at the band's edge: the bound below).
  const Worst near = worst_error(ac::expm1_fast, [](double x) { return std::expm1(x); }, -0.0312f, 0.0312f, 100001, 2e-7);
  EXPECT_LE(near.error, 1.0) << "at " << near.at;
  const Worst edge = worst_error(ac::expm1_fast, [](double x) { return std::expm1(x); }, -0.5f, 0.5f, 100001, 1e-5);
  EXPECT_LE(edge.error, 1.0) << "at " << edge.at;
  const Worst far = worst_error(ac::expm1_fast, [](double x) { return std::expm1(x); }, -30.f, 30.f, 100001, 1e-5);
  EXPECT_LE(far.error, 1.0) << "at " << far.at;
  EXPECT_EQ(ac::expm1_fast(0.f), 0.f);
  EXPECT_EQ(ac::expm1_fast(-100.f), -1.f);
}

TEST(FastMath, ErfIsRelativelyExactOnEitherSideOfItsBranch) {
  const Worst near = worst_error(ac::erf_fast, [](double x) { return std::erf(x); }, -0.4999f, 0.4999f, 100001, 2e-7);
  EXPECT_LE(near.error, 1.0) << "at " << near.at;
  const Worst far = worst_error(ac::erf_fast, [](double x) { return std::erf(x); }, -8.f, 8.f, 200001, 1e-6);
  EXPECT_LE(far.error, 1.0) << "at " << far.at;
  EXPECT_EQ(ac::erf_fast(0.f), 0.f);
  EXPECT_EQ(ac::erf_fast(30.f), 1.f);
  EXPECT_EQ(ac::erf_fast(-30.f), -1.f);
  EXPECT_EQ(ac::erf_fast(INFINITY), 1.f);
  EXPECT_TRUE(std::isnan(ac::erf_fast(NAN)));
}

TEST(FastMath, GeluErfFormFollowsErfFast) {
  // 0.5 x (1 + erf(x / sqrt 2)): for x < 0 the sum cancels, so the bound is absolute, 1e-6 of |x| (the
  // output is stored in 16 bits, whose spacing near |x| is 5e-4 of it).
  for (int i = -80000; i <= 80000; ++i) {
    const float x = static_cast<float>(i) * 1e-4f;
    const double want = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    EXPECT_LE(std::fabs(ac::gelu_erf_fast(x) - want), 1e-6 * std::fabs(x) + 1e-12) << "at " << x;
  }
}

TEST(FastMath, SigmoidIsRelativelyExactOnBothTails) {
  const Worst s = worst_error(ac::sigmoid_fast, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -80.f, 80.f, 400001, 1e-6);
  EXPECT_LE(s.error, 1.0) << "at " << s.at;
  EXPECT_EQ(ac::sigmoid_fast(0.f), 0.5f);
  EXPECT_EQ(ac::sigmoid_fast(200.f), 1.f);
}

}  // namespace
}  // namespace agentcompile
