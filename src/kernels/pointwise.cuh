// The IR's pointwise ops on registers (ir/ops.h), as the reference interpreter defines them: fp32
// math through the CUDA math library's accurate functions (expf, logf, erff, tanhf, ...), the
// NaN-propagating extremes and clamps torch has, and the integer and bool conversions of `cast`.
// Generated row programs (codegen/renderers/row_program_code.cpp) call these by name.
#pragma once

namespace ac {

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// Max / min that propagate NaN, as torch.maximum, torch.max and the reference interpreter do.
__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }
__device__ __forceinline__ float nan_min(float a, float b) { return (b < a || b != b) ? b : a; }

__device__ __forceinline__ float sigmoid(float v) { return 1.f / (1.f + expf(-v)); }
// relu(NaN) is NaN (torch.relu).
__device__ __forceinline__ float relu(float v) { return v < 0.f ? 0.f : v; }
__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_tanh(float v) {
  return 0.5f * v * (1.f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
}
__device__ __forceinline__ float leaky_relu(float v, float slope) { return v >= 0.f ? v : slope * v; }
// clamp keeps NaN (a comparison with NaN is false).
__device__ __forceinline__ float clamp_lo(float v, float lo) { return v < lo ? lo : v; }
__device__ __forceinline__ float clamp_hi(float v, float hi) { return v > hi ? hi : v; }
// pow(a, b) as std::pow gives it for floats, under --use_fast_math (where powf is exp2(b * log2(a)),
// NaN for a negative base): a^0 = 1; a negative base takes an integral exponent with the sign of its
// parity and gives NaN for any other; the magnitude is powf(|a|, b).
__device__ __forceinline__ float pow_real(float a, float b) {
  if (b == 0.f) return 1.f;
  const float magnitude = powf(fabsf(a), b);
  if (!(a < 0.f)) return a != a ? a : magnitude;
  if (rintf(b) != b) return __int_as_float(0x7fc00000);
  return fmodf(fabsf(b), 2.f) == 1.f ? -magnitude : magnitude;
}

__device__ __forceinline__ float signf(float v) { return v > 0.f ? 1.f : v < 0.f ? -1.f : 0.f; }  // 0 for 0, -0 and NaN
__device__ __forceinline__ int signi(int v) { return (v > 0) - (v < 0); }
// float -> int truncates toward zero, saturating, NaN -> 0 (cvt.rzi.s32.f32 does all three).
__device__ __forceinline__ int float_to_int(float v) { return __float2int_rz(v); }

}  // namespace ac
