// Shorter forms of expm1 and sigmoid for row programs whose results are stored in 16 bits (the
// elementwise family's "fast math" candidates). A large f16 elementwise kernel moves 4 bytes an element,
// so on an H200 it is bound by instruction issue before memory once an element costs more than ~24
// instructions; the accurate library forms cost ~30 (SELU in f16: ~35 an element in all). Counted in
// SASS (sm_90a, nvcc 13, 16 elements a thread, the plain copy at 8.5 an element):
//   expm1f 37 an element -> expm1_fast 25;  sigmoid (expf and an IEEE division) 36 -> sigmoid_fast 17.
// (tanhf, and erff inside GELU, are already cheaper than any short form tried: 24 and 34 an element
// against 35 and 37, so they stay as they are.)
//   expm1_fast   |x| < 0.5: a degree-8 Taylor polynomial (relative error < 1e-7); else exp(x) - 1 through
//                ex2.approx (relative error ~2^-21 where |expm1| > 0.39)
//   sigmoid_fast 1 / (1 + exp(-x)) through ex2.approx and the fast division
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
  // Taylor terms 1/1! .. 1/8! in Horner form.
  const float poly =
      x * (1.f + x * (0.5f + x * (1.6666667e-1f +
                                  x * (4.1666668e-2f + x * (8.3333338e-3f + x * (1.3888889e-3f + x * (1.9841270e-4f + x * 2.4801587e-5f)))))));
  const float big = fast_exp(x) - 1.f;
  return (x > -0.5f && x < 0.5f) ? poly : big;
}

// __fdividef(1, d) is 0 for d > 2^126, where the sigmoid is below 2^-126 anyway.
AC_FAST_MATH_FN float sigmoid_fast(float x) { return fast_divide(1.f, 1.f + fast_exp(-x)); }

}  // namespace ac

#undef AC_FAST_MATH_FN
