// Softmax family: a numerically stable softmax or log_softmax over the last axis of [rows, H], with
// pointwise ops before it (scale, mask add, cast) and after it. Both need the row's max and sum of
// exp(x - max): softmax writes exp(x - max) / sum, log_softmax x - max - log(sum).
//
// Same row geometry as rmsnorm (TPR threads per row, ROWS rows per block, VEC-column chunks). With
// CACHE the thread's share of the row stays in registers: one read, max, sum of exp(x - max), one
// write. Without it (rows too long for registers) the row is streamed twice: an online
// (max, sum) pass, then a pass that recomputes x and writes exp(x - max) / sum.
//
// Few long rows (a vocabulary) leave most of the GPU idle with one block per row, so the split form
// runs two launches over a grid (rows, SPLIT), one slice of columns per block: softmax_rows_stats
// writes each slice's online (max, sum) to the workspace, softmax_rows_write merges a row's SPLIT
// pairs in every block (cooperatively: a serial merge per thread costs SPLIT L2 round trips) and
// writes its slice.
#pragma once

#include "rowwise.cuh"

namespace ac {

// Online (max, sum of exp(x - max)) over this thread's share of columns [begin, end) of `row`.
template <int TPR, int VEC, typename Program>
__device__ __forceinline__ void softmax_span_stats(const Program& prog, long long row, int lane, int begin, int end,
                                                   float& m, float& s) {
#pragma unroll 2
  for (int col = begin + lane * VEC; col < end; col += TPR * VEC) {
    typename Program::Chunk chunk;
    prog.load(row, col, chunk);
    prog.pre(row, col, chunk);
    float cm = m;
#pragma unroll
    for (int e = 0; e < VEC; ++e) cm = nan_max(cm, chunk.x[e]);
    s = m == neg_inf() ? 0.f : s * __expf(m - cm);
#pragma unroll
    for (int e = 0; e < VEC; ++e) s += __expf(chunk.x[e] - cm);
    m = cm;
  }
}

// Recomputes x over this thread's share of [begin, end) and writes the softmax (and what follows).
template <int TPR, int VEC, typename Program>
__device__ __forceinline__ void softmax_span_write(const Program& prog, long long row, int lane, int begin, int end,
                                                   const RowStats& stats) {
#pragma unroll 2
  for (int col = begin + lane * VEC; col < end; col += TPR * VEC) {
    typename Program::Chunk chunk;
    prog.load(row, col, chunk);
    prog.pre(row, col, chunk);
    prog.post(row, col, chunk, stats);
  }
}

template <int H, int TPR, int VEC, int ROWS, bool CACHE, typename Program>
__device__ __forceinline__ void softmax_rows(const Program& prog, long long rows) {
  using G = RowGeometry<TPR, ROWS>;
  constexpr int kStep = TPR * VEC;
  constexpr int kChunks = (H + kStep - 1) / kStep;
  static_assert(H % VEC == 0, "a vector never straddles a row");
  __shared__ float scratch_a[ROWS * G::kWarpsPerRow];
  __shared__ float scratch_b[ROWS * G::kWarpsPerRow];
  const long long row = static_cast<long long>(blockIdx.x) * ROWS + G::row_in_block();
  const bool active = row < rows;  // inactive threads still join the block's reductions
  const int first_col = G::lane() * VEC;
  auto owns = [&](int c) { return active && (H % kStep == 0 || c * kStep + first_col < H); };
  RowStats stats;

  if constexpr (CACHE) {
    typename Program::Chunk chunk[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c)) prog.load(row, c * kStep + first_col, chunk[c]);
    float m = neg_inf();
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c)) {
        prog.pre(row, c * kStep + first_col, chunk[c]);
#pragma unroll
        for (int e = 0; e < VEC; ++e) m = nan_max(m, chunk[c].x[e]);
      }
    m = row_allreduce<TPR, ROWS>(m, scratch_a, MaxOp{});
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c))
#pragma unroll
        for (int e = 0; e < VEC; ++e) s += __expf(chunk[c].x[e] - m);
    s = row_allreduce<TPR, ROWS>(s, scratch_b, SumOp{});
    stats.max = m;
    stats.inv_sum = 1.f / s;
    stats.log_sum = logf(s);
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c)) prog.post(row, c * kStep + first_col, chunk[c], stats);
  } else {
    float m = neg_inf(), s = 0.f;
    if (active) softmax_span_stats<TPR, VEC>(prog, row, G::lane(), 0, H, m, s);
    row_softmax_stats<TPR, ROWS>(m, s, scratch_a, scratch_b);
    stats.max = m;
    stats.inv_sum = 1.f / s;
    stats.log_sum = logf(s);
    if (active) softmax_span_write<TPR, VEC>(prog, row, G::lane(), 0, H, stats);
  }
}

// Split form, launch 1: grid (rows, SPLIT), TPR threads. partial: [rows, SPLIT] (max, sum).
template <int H, int TPR, int VEC, int SPLIT, typename Program>
__device__ __forceinline__ void softmax_rows_stats(const Program& prog, long long rows, float2* partial) {
  using S = SplitSlice<H, VEC, SPLIT>;
  __shared__ float scratch_a[RowGeometry<TPR, 1>::kWarpsPerRow];
  __shared__ float scratch_b[RowGeometry<TPR, 1>::kWarpsPerRow];
  const long long row = blockIdx.x;
  const int split = blockIdx.y;
  if (row >= rows) return;  // whole block
  float m = neg_inf(), s = 0.f;
  softmax_span_stats<TPR, VEC>(prog, row, threadIdx.x, S::begin(split), S::end(split), m, s);
  row_softmax_stats<TPR, 1>(m, s, scratch_a, scratch_b);
  if (threadIdx.x == 0) partial[row * SPLIT + split] = make_float2(m, s);
}

// Split form, launch 2: grid (rows, SPLIT), TPR threads. The block merges the row's SPLIT
// partials together (a strided share per thread, then across the block), then writes its slice.
template <int H, int TPR, int VEC, int SPLIT, typename Program>
__device__ __forceinline__ void softmax_rows_write(const Program& prog, long long rows, const float2* partial) {
  using S = SplitSlice<H, VEC, SPLIT>;
  __shared__ float scratch_a[RowGeometry<TPR, 1>::kWarpsPerRow];
  __shared__ float scratch_b[RowGeometry<TPR, 1>::kWarpsPerRow];
  const long long row = blockIdx.x;
  const int split = blockIdx.y;
  if (row >= rows) return;  // whole block
  float m = neg_inf(), s = 0.f;
  for (int k = threadIdx.x; k < SPLIT; k += TPR) {
    const float2 p = partial[row * SPLIT + k];
    if (p.x == neg_inf()) continue;  // an empty slice contributes nothing
    const float nm = nan_max(m, p.x);
    s = (m == neg_inf() ? 0.f : s * __expf(m - nm)) + p.y * __expf(p.x - nm);
    m = nm;
  }
  row_softmax_stats<TPR, 1>(m, s, scratch_a, scratch_b);
  RowStats stats;
  stats.max = m;
  stats.inv_sum = 1.f / s;
  stats.log_sum = logf(s);
  softmax_span_write<TPR, VEC>(prog, row, threadIdx.x, S::begin(split), S::end(split), stats);
}

}  // namespace ac
