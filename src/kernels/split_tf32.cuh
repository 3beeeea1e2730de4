// Splits fp32 values into a TF32 high part and the fp32 residual, for fp32 GEMMs on TF32 tensor cores
// at fp32 accuracy ("3xTF32"): with x = hi + lo, where hi is x rounded to TF32's 10 mantissa bits (so
// a TF32 tensor core reads it exactly) and lo = x - hi (exact in fp32, |lo| <= 2^-11 |x|),
//   A·B = A_hi·B_hi + A_hi·B_lo + A_lo·B_hi + A_lo·B_lo,
// and the three products the GEMMs compute leave out only A_lo·B_lo (2^-22 of each term) and lo's own
// rounding to TF32 inside the GEMM (2^-11 of lo, so again ~2^-22 of x): errors of the order of an
// fp32 SGEMM's accumulation, where one TF32 product alone is off by 2^-11.
#pragma once

#include "common.cuh"

namespace ac {

// x rounded to the nearest TF32 value (ties to even), kept in an fp32 register with its 13 low
// mantissa bits zero. Inf and NaN stay as they are; a finite value that would round past the largest
// TF32 value is truncated instead, so hi stays finite and lo carries the rest.
__device__ __forceinline__ float tf32_high(float x) {
  const unsigned int bits = __float_as_uint(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;
  const unsigned int rounded = (bits + 0xfffu + ((bits >> 13) & 1u)) & 0xffffe000u;
  if ((rounded & 0x7f800000u) == 0x7f800000u) return __uint_as_float(bits & 0xffffe000u);
  return __uint_as_float(rounded);
}

template <int VEC>
struct SplitVector;
template <>
struct SplitVector<1> {
  using type = float;
};
template <>
struct SplitVector<4> {
  using type = float4;
};

// `count` vectors of VEC floats from `src` into `hi` and `lo` (same layout), one per thread of the grid.
// Non-finite values give lo = 0, so an Inf or NaN reaches the products once, through hi.
template <int VEC>
__device__ __forceinline__ void split_tf32(const float* __restrict__ src, float* __restrict__ hi, float* __restrict__ lo, long long count) {
  using V = typename SplitVector<VEC>::type;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  V x = reinterpret_cast<const V*>(src)[i];
  V h, l;
  float* xs = reinterpret_cast<float*>(&x);
  float* hs = reinterpret_cast<float*>(&h);
  float* ls = reinterpret_cast<float*>(&l);
#pragma unroll
  for (int k = 0; k < VEC; ++k) {
    hs[k] = tf32_high(xs[k]);
    ls[k] = (__float_as_uint(xs[k]) & 0x7f800000u) != 0x7f800000u ? xs[k] - hs[k] : 0.0f;
  }
  reinterpret_cast<V*>(hi)[i] = h;
  reinterpret_cast<V*>(lo)[i] = l;
}

}  // namespace ac
