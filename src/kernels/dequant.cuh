// The row formats of quantized weights (ir/quant.h) on the device: the format codes, the scales as
// stored, and dequantizing whole rows to a float type for the cuBLAS fallback of quantized matmuls
// (the GEMMs then read the dequantized rows from the workspace). The quantized GEMV (qgemv.cuh)
// dequantizes in registers instead.
//
// Row n of K elements starts at n * ROW_BYTES: int8: K bytes q_k, then the row's scale; int4: K/2
// bytes of nibbles (element k's nibble is the low half of byte k/2 for even k, the high half for odd
// k), then K/G scales, then (zero-point formats) K/G bytes z_g. Element k is s·q_k, s_g·(n_k − 8) or
// s_g·(n_k − z_g): one f32 multiply, exactly the reference's value, then rounded to the output type.
#pragma once

#include "common.cuh"

namespace ac {

enum QGemvFormat { kQInt8 = 0, kQInt4 = 1, kQInt4Zp = 2 };

// Elements one 16-byte load holds.
template <int FORMAT>
struct QGemvChunk {
  static constexpr int kElems = FORMAT == kQInt8 ? 16 : 32;
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

// One block per row (blockIdx.x), each thread a 16-byte chunk at a time.
template <typename T, typename S, int FORMAT, int G, int ROW_BYTES, int THREADS>
__device__ __forceinline__ void dequantize_rows(const DequantizeParams<T>& p) {
  constexpr int kElems = QGemvChunk<FORMAT>::kElems;
  const int row = blockIdx.x;
  if (row >= p.rows) return;
  const int K = p.K;
  const unsigned char* w = p.w + static_cast<long long>(row) * ROW_BYTES;
  T* out = p.out + static_cast<long long>(row) * K;
  const float row_scale = FORMAT == kQInt8 ? qgemv_scale_value<S>(qgemv_scale_bits(w + K)) : 0.f;
  for (int at = threadIdx.x * kElems; at < K; at += THREADS * kElems) {
    const uint4 q = load_stream16(w + (FORMAT == kQInt8 ? at : at / 2));
    const unsigned int words[4] = {q.x, q.y, q.z, q.w};
    alignas(16) T values[kElems];
    if constexpr (FORMAT == kQInt8) {
#pragma unroll
      for (int b = 0; b < 16; ++b)
        values[b] = from_float<T>(row_scale * static_cast<float>(static_cast<signed char>((words[b / 4] >> (8 * (b % 4))) & 0xff)));
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
}

}  // namespace ac
