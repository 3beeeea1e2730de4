// Shorter forms of expm1, sigmoid and erf for row programs whose results are stored in 16 bits (the
// elementwise family's "fast math" candidates). A large f16 elementwise kernel moves 4 bytes an element,
// so on an H200 it is bound by instruction issue before memory once an element costs more than ~24
// instructions; the accurate library forms cost ~30 (SELU in f16: ~35 an element in all). Counted in
// SASS (sm_90a, nvcc 13, 16 elements a thread, the plain copy at 8.5 an element):
//   expm1f 37 an element -> expm1_fast's first form (a degree-8 polynomial inside |x| < 0.5) 25;
//   sigmoid (expf and an IEEE division) 36 -> sigmoid_fast 17; tanhf 24, cheaper than any short form
//   tried, so it stays; erff 34.
// With that first form KernelBench's ELU and SELU in f16 stayed issue-bound (0.87x eager on an H200), so
// expm1_fast now keeps a degree-4 polynomial inside 1/32 (about 12 operations by count, not counted in
// SASS), and erf_fast (about 25 operations) replaces erff: ELU, SELU and GELU in f16 went to 0.95-0.96x
// eager (bench/results/2026-11-28-h200/session10/fast-math-h200/).
//   expm1_fast   |x| < 1/32: a degree-4 Taylor polynomial (relative error < 1e-7); else exp(x) - 1 through
//                ex2.approx, whose ~2.4e-7 relative error in exp is at most ~1e-5 of |expm1| there: 1/50 of
//                an f16 ulp (2^-11), 1/400 of a bf16 one
//   sigmoid_fast 1 / (1 + exp(-x)) through ex2.approx and the fast division
//   erf_fast     |x| < 0.5: the odd Taylor polynomial to x^11 (relative error < 1e-7); else
//                1 - t (a1 + a2 t + .. + a5 t^4) exp(-x^2), t = 1 / (1 + p |x|) (Abramowitz & Stegun 7.1.26:
//                absolute error < 1.5e-7, and with f32 rounding < 1e-6 of |erf| > 0.52 there: 1/500 of an f16 ulp),
//                with x's sign
// They are candidates like any other: validated against the reference interpreter's accurate math.
// Host builds (tests/unit/fast_math_test.cpp) take expf and a plain division for the SFU intrinsics, so
// the polynomial and algebraic parts are checked on the CPU.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define AC_FAST_MATH_FN __host__ __device__ __forceinline__
#else
#include <cmath>
#define AC_FAST_MATH_FN inline
#endif

namespace ac {

AC_FAST_MATH_FN float fast_exp(float x) {
#ifdef __CUDA_ARCH__
  return __expf(x);
#else
  return ::expf(x);
#endif
}

AC_FAST_MATH_FN float fast_divide(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdividef(a, b);
#else
  return a / b;
#endif
}

AC_FAST_MATH_FN float expm1_fast(float x) {
  // Taylor terms 1/1! .. 1/4! in Horner form: the next, x^5 / 120, is below 1e-8 of |x| inside 1/32.
  const float poly = x * (1.f + x * (0.5f + x * (1.6666667e-1f + x * 4.1666668e-2f)));
  const float big = fast_exp(x) - 1.f;
  return (x > -0.03125f && x < 0.03125f) ? poly : big;
}

AC_FAST_MATH_FN float erf_fast(float x) {
  const float x2 = x * x;
  // 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320): the next term is below 3e-8 of |erf| inside 0.5.
  const float poly =
      x * (1.1283792f + x2 * (-0.37612639f + x2 * (0.11283792f + x2 * (-0.026866171f + x2 * (5.2239776e-3f + x2 * -8.5483270e-4f)))));
  const float a = x < 0.f ? -x : x;
  const float t = fast_divide(1.f, 1.f + 0.3275911f * a);
  const float tail =
      1.f - t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f)))) * fast_exp(-x2);
  return a < 0.5f ? poly : (x < 0.f ? -tail : tail);
}

// GELU, erf form (pointwise.cuh's gelu_erf) through erf_fast.
AC_FAST_MATH_FN float gelu_erf_fast(float x) { return 0.5f * x * (1.f + erf_fast(x * 0.70710678118654752f)); }

// __fdividef(1, d) is 0 for d > 2^126, where the sigmoid is below 2^-126 anyway.
AC_FAST_MATH_FN float sigmoid_fast(float x) { return fast_divide(1.f, 1.f + fast_exp(-x)); }

}  // namespace ac

#undef AC_FAST_MATH_FN
