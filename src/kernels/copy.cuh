// Copy family: layout ops that move data (transpose, concat, flip, a slice of an inner axis) and the
// gathers (index_select, gather, embedding of a table that is not a weight) and index_copy's scatter.
//
// The generated Program (codegen/renderers/copy.cpp) knows every size and stride: copy(o) moves the
// VEC output elements that start at flat output index o (one source piece each: a concat picks its
// operand by the coordinate on its axis; a flip is a negative stride; a gather reads its index
// first). copy_elements gives each thread one such vector. A transpose that moves the innermost axis
// reads and writes through a 32 x 33 shared-memory tile instead (copy_tiled), so both the reads and
// the writes are coalesced: consecutive threads read along the source's innermost axis (output dim
// P) and write along the output's (Q).
#pragma once

#include "rowwise.cuh"

namespace ac {

// Moves VEC elements (one aligned access each side when VEC > 1).
template <typename T, int VEC>
__device__ __forceinline__ void copy_vec(T* dst, const T* src) {
  if constexpr (VEC == 1) {
    *dst = *src;
  } else {
    *reinterpret_cast<VecStore<T, VEC>*>(dst) = *reinterpret_cast<const VecStore<T, VEC>*>(src);
  }
}

// What an out-of-range index writes: NaN for floats, the most negative int, 0xff for a bool byte.
template <typename T> __device__ __forceinline__ T poison();
template <> __device__ __forceinline__ float poison<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ __half poison<__half>() { return __ushort_as_half(0x7e00); }
template <> __device__ __forceinline__ __nv_bfloat16 poison<__nv_bfloat16>() { return __ushort_as_bfloat16(0x7fc0); }
template <> __device__ __forceinline__ int poison<int>() { return static_cast<int>(0x80000000u); }
template <> __device__ __forceinline__ unsigned char poison<unsigned char>() { return 0xff; }

template <typename T, int VEC>
__device__ __forceinline__ void poison_vec(T* dst) {
#pragma unroll
  for (int e = 0; e < VEC; ++e) dst[e] = poison<T>();
}

// One vector of VEC output elements per thread: `vectors` = output elements / VEC.
template <int VEC, int THREADS, typename Program>
__device__ __forceinline__ void copy_elements(const Program& prog, long long vectors) {
  const long long v = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x;
  if (v < vectors) prog.copy(v * VEC);
}

// A transpose of the innermost axis through shared memory: tiles of 32 (P) x 32 (Q) elements, a
// block of 32 x 8 threads. Tile t of the grid is (batch b, P tile, Q tile), batch being the product
// of every other output dim. Program gives P, Q, src_base(b), out_base(b), kSrcQ (the source
// stride of Q; P's is 1) and kOutP (the output stride of P; Q's is 1).
template <typename T, typename Program>
__device__ __forceinline__ void copy_tiled(const Program& prog) {
  __shared__ T tile[32][33];
  constexpr long long kTilesP = (Program::P + 31) / 32, kTilesQ = (Program::Q + 31) / 32;
  const long long t = blockIdx.x;
  const long long b = t / (kTilesP * kTilesQ);
  const long long p0 = (t / kTilesQ) % kTilesP * 32, q0 = t % kTilesQ * 32;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const T* src = prog.src + prog.src_base(b);
  T* out = prog.out + prog.out_base(b);
#pragma unroll
  for (int k = 0; k < 32; k += 8) {
    const long long p = p0 + tx, q = q0 + ty + k;
    if (p < Program::P && q < Program::Q) tile[ty + k][tx] = src[p + q * Program::kSrcQ];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < 32; k += 8) {
    const long long p = p0 + ty + k, q = q0 + tx;
    if (p < Program::P && q < Program::Q) out[p * Program::kOutP + q] = tile[tx][ty + k];
  }
}

}  // namespace ac
