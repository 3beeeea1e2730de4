// The row formats of quantized weights (ir/quant.h) on the device: the format codes, the scales as
// stored, and dequantizing whole rows to a float type for the cuBLAS fallback of quantized matmuls
// (the GEMMs then read the dequantized rows from the workspace). The quantized GEMV (qgemv.cuh)
// dequantizes in registers instead.
//
// Row n of K elements starts at n * ROW_BYTES: int8: K bytes q_k, then the row's scale (or K/G group
// scales); int4: K/2 bytes of nibbles (element k's nibble is the low half of byte k/2 for even k, the
// high half for odd k), then K/G scales, then (zero-point formats) K/G bytes z_g or (offset format)
// K/G f16 offsets m_g. Element k is s·q_k, s_g·q_k, s_g·(n_k − 8), s_g·(n_k − z_g) or s_g·n_k + m_g: one
// f32 multiply (and add), exactly the reference's value, then rounded to the output type.
#pragma once

#include "common.cuh"

namespace ac {

// kQInt8Group: int8 with a scale per group (GGUF Q8_0's values); kQInt4Offset: int4 with a scale and an
// f16 offset per group, x = s·n + m (GGUF Q4_1's values).
enum QGemvFormat { kQInt8 = 0, kQInt4 = 1, kQInt4Zp = 2, kQInt8Group = 3, kQInt4Offset = 4 };

template <int FORMAT>
constexpr bool kQInt8Bytes = FORMAT == kQInt8 || FORMAT == kQInt8Group;

// Elements one 16-byte load holds.
template <int FORMAT>
struct QGemvChunk {
  static constexpr int kElems = kQInt8Bytes<FORMAT> ? 16 : 32;
};

// A scale as stored (16 bits) and as a float: the raw load is issued with the weights and converted
// only when used, so the warp does not wait on it early.
__device__ __forceinline__ unsigned short qgemv_scale_bits(const unsigned char* at) { return *reinterpret_cast<const unsigned short*>(at); }
template <typename S>
__device__ __forceinline__ float qgemv_scale_value(unsigned short bits);
template <>
__device__ __forceinline__ float qgemv_scale_value<__half>(unsigned short bits) { return __half2float(__ushort_as_half(bits)); }
template <>
__device__ __forceinline__ float qgemv_scale_value<__nv_bfloat16>(unsigned short bits) { return __bfloat162float(__ushort_as_bfloat16(bits)); }

template <typename T>
struct DequantizeParams {
  const unsigned char* w;  // [rows] rows of ROW_BYTES
  T* out;                  // [rows, K]
  int rows;
  int K;
};

// One 16-byte chunk per thread over the whole matrix (blockIdx.x * THREADS + threadIdx.x counts the chunks
// row by row): a short row (K = 2048 int4 is 64 chunks) keeps every thread of a block busy, where a block
// per row left most of its threads idle and the launch ran at ~0.5 TB/s.
template <typename T, typename S, int FORMAT, int G, int ROW_BYTES, int THREADS>
__device__ __forceinline__ void dequantize_rows(const DequantizeParams<T>& p) {
  constexpr int kElems = QGemvChunk<FORMAT>::kElems;
  const int K = p.K;
  const int chunks_per_row = K / kElems;
  const long long chunk = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x;
  if (chunk >= static_cast<long long>(p.rows) * chunks_per_row) return;
  const long long row = chunk / chunks_per_row;
  const int at = static_cast<int>(chunk - row * chunks_per_row) * kElems;
  const unsigned char* w = p.w + row * ROW_BYTES;
  T* out = p.out + row * K;
  const float row_scale = FORMAT == kQInt8 ? qgemv_scale_value<S>(qgemv_scale_bits(w + K)) : 0.f;
  const uint4 q = load_stream16(w + (kQInt8Bytes<FORMAT> ? at : at / 2));
  const unsigned int words[4] = {q.x, q.y, q.z, q.w};
  alignas(16) T values[kElems];
  if constexpr (kQInt8Bytes<FORMAT>) {
    const float s = FORMAT == kQInt8 ? row_scale : qgemv_scale_value<S>(qgemv_scale_bits(w + K + (at / G) * 2));
#pragma unroll
    for (int b = 0; b < 16; ++b)
      values[b] = from_float<T>(s * static_cast<float>(static_cast<signed char>((words[b / 4] >> (8 * (b % 4))) & 0xff)));
  } else if constexpr (FORMAT == kQInt4Offset) {
    const int g = at / G;
    const float s = qgemv_scale_value<S>(qgemv_scale_bits(w + K / 2 + g * 2));
    const float m = qgemv_scale_value<S>(qgemv_scale_bits(w + K / 2 + (K / G) * 2 + g * 2));
#pragma unroll
    for (int e = 0; e < 32; ++e) {
      const float product = __fmul_rn(s, static_cast<float>((words[e / 8] >> (4 * (e % 8))) & 0xf));
      values[e] = from_float<T>(__fadd_rn(product, m));  // no contraction: the reference rounds the product
    }
  } else {
    const int g = at / G;
    const float s = qgemv_scale_value<S>(qgemv_scale_bits(w + K / 2 + g * 2));
    const int zero = FORMAT == kQInt4Zp ? static_cast<int>(w[K / 2 + (K / G) * 2 + g]) : 8;
#pragma unroll
    for (int e = 0; e < 32; ++e)
      values[e] = from_float<T>(s * static_cast<float>(static_cast<int>((words[e / 8] >> (4 * (e % 8))) & 0xf) - zero));
  }
#pragma unroll
  for (int v = 0; v < static_cast<int>(kElems * sizeof(T) / 16); ++v)
    reinterpret_cast<uint4*>(out + at)[v] = reinterpret_cast<const uint4*>(values)[v];
}

}  // namespace ac
