// Scan family: an inclusive cumsum or cumprod along the last axis of [rows, H], with pointwise ops
// before it (a mask multiply, a cast) and after it, as a generated row program.
//
// TPR threads per row walk the row in chunks of TPR * VEC columns. In a chunk each thread scans its
// VEC elements in registers, the thread totals are scanned across the row (shuffles inside a warp,
// then one value per warp through shared memory), and the running carry of the chunks before is
// folded in before post() writes the chunk; the carry then grows by the chunk's total. A row of up
// to 32 threads lives in one warp (ROWS rows per block); wider rows take the whole block. Sums and
// products accumulate in fp32 (the reference in double: the tolerance covers the difference).
#pragma once

#include "rowwise.cuh"

namespace ac {

enum ScanOp { kScanSum = 0, kScanProd = 1 };

template <int OP> __device__ __forceinline__ float scan_identity() { return OP == kScanProd ? 1.f : 0.f; }
template <int OP> __device__ __forceinline__ float scan_apply(float a, float b) { return OP == kScanProd ? a * b : a + b; }

// Exclusive scan of v over the TPR threads of this thread's row (in lane order: what the threads
// before it hold); `total` gets the row's total. `scratch` holds TPR / 32 floats when TPR > 32
// (then a block is one row). Every thread of the block must call it.
template <int TPR, int OP>
__device__ __forceinline__ float row_exclusive_scan(float v, float* scratch, float& total) {
  constexpr int kWidth = TPR < 32 ? TPR : 32;
  const int seg_lane = threadIdx.x % kWidth;
#pragma unroll
  for (int offset = 1; offset < kWidth; offset <<= 1) {
    const float o = __shfl_up_sync(0xffffffffu, v, offset, kWidth);
    if (seg_lane >= offset) v = scan_apply<OP>(o, v);
  }
  float exclusive = __shfl_up_sync(0xffffffffu, v, 1, kWidth);
  if (seg_lane == 0) exclusive = scan_identity<OP>();
  if constexpr (TPR <= 32) {
    total = __shfl_sync(0xffffffffu, v, kWidth - 1, kWidth);
    return exclusive;
  } else {
    constexpr int kWarps = TPR / 32;
    const int warp = threadIdx.x / 32;
    if (seg_lane == 31) scratch[warp] = v;
    __syncthreads();
    float before = scan_identity<OP>();
    total = scan_identity<OP>();
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp) before = scan_apply<OP>(before, scratch[w]);
      total = scan_apply<OP>(total, scratch[w]);
    }
    __syncthreads();  // scratch is reused by the next chunk
    return scan_apply<OP>(before, exclusive);
  }
}

template <int H, int TPR, int VEC, int ROWS, int OP, typename Program>
__device__ __forceinline__ void scan_rows(const Program& prog, long long rows) {
  using G = RowGeometry<TPR, ROWS>;
  static_assert(TPR <= 32 || ROWS == 1, "a row wider than a warp takes the whole block");
  static_assert(H % VEC == 0, "a vector never straddles a row");
  constexpr int kStep = TPR * VEC;
  constexpr int kChunks = (H + kStep - 1) / kStep;
  __shared__ float scratch[TPR > 32 ? TPR / 32 : 1];
  const long long row = static_cast<long long>(blockIdx.x) * ROWS + G::row_in_block();
  if (TPR > 32 && row >= rows) return;  // the whole block: no barrier is skipped by part of it
  const bool active = row < rows;       // a row inside a warp: inactive lanes still shuffle
  const RowStats stats;
  float carry = scan_identity<OP>();
#pragma unroll 1
  for (int c = 0; c < kChunks; ++c) {
    const int col = c * kStep + G::lane() * VEC;
    const bool owns = active && col < H;
    typename Program::Chunk chunk;
    float local = scan_identity<OP>();
    if (owns) {
      prog.load(row, col, chunk);
      prog.pre(row, col, chunk);
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        local = scan_apply<OP>(local, chunk.x[e]);
        chunk.x[e] = local;  // the thread's own inclusive prefix
      }
    }
    float total;
    const float exclusive = row_exclusive_scan<TPR, OP>(local, scratch, total);
    if (owns) {
      // What comes before this thread's first element: the carry and the threads before it.
      const float before = scan_apply<OP>(carry, exclusive);
#pragma unroll
      for (int e = 0; e < VEC; ++e) chunk.x[e] = scan_apply<OP>(before, chunk.x[e]);
      prog.post(row, col, chunk, stats);
    }
    carry = scan_apply<OP>(carry, total);
  }
}

}  // namespace ac
