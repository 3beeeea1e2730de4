// LayerNorm family: y = (x - mean) * rsqrt(var + eps) (* w) (+ b) over the last axis of [rows, H]
// (var the biased variance), with pointwise ops before and after it, as a generated row program.
//
// Same row geometry as rmsnorm (TPR threads per row, ROWS rows per block, VEC-column chunks). With
// CACHE the thread's share of the row stays in registers: one read, the mean, then the sum of
// squared deviations from it (two exact passes over registers, as the reference computes), one
// write. Without it (rows too long for registers) the row is streamed twice: sums of x - K and of
// (x - K)^2 around K = x[0] (a shift inside the data keeps E[x^2] - E[x]^2 from cancelling), then a
// pass that recomputes x and writes.
//
// Few long rows (a LayerNorm over a whole image) leave most of the GPU idle, so the split form runs
// two launches over a grid (rows, SPLIT): layernorm_rows_stats writes each slice's shifted sums to
// the workspace, layernorm_rows_write folds a row's SPLIT pairs in every block and writes its slice.
#pragma once

#include "rowwise.cuh"

namespace ac {

// x[0] of `row`: the shift of the streamed sums (every thread of the row computes it alike).
template <int VEC, typename Program>
__device__ __forceinline__ float layernorm_shift(const Program& prog, long long row) {
  typename Program::Chunk chunk;
  prog.load(row, 0, chunk);
  prog.pre(row, 0, chunk);
  return chunk.x[0];
}

// Sums of (x - k) and (x - k)^2 over this thread's share of columns [begin, end) of `row`.
template <int TPR, int VEC, typename Program>
__device__ __forceinline__ void layernorm_span_sums(const Program& prog, long long row, int lane, int begin, int end, float k,
                                                    float& s1, float& s2) {
#pragma unroll 2
  for (int col = begin + lane * VEC; col < end; col += TPR * VEC) {
    typename Program::Chunk chunk;
    prog.load(row, col, chunk);
    prog.pre(row, col, chunk);
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      const float d = chunk.x[e] - k;
      s1 += d;
      s2 = fmaf(d, d, s2);
    }
  }
}

template <int TPR, int VEC, typename Program>
__device__ __forceinline__ void layernorm_span_write(const Program& prog, long long row, int lane, int begin, int end,
                                                     const RowStats& stats) {
#pragma unroll 2
  for (int col = begin + lane * VEC; col < end; col += TPR * VEC) {
    typename Program::Chunk chunk;
    prog.load(row, col, chunk);
    prog.pre(row, col, chunk);
    prog.post(row, col, chunk, stats);
  }
}

// Mean and 1/std from shifted sums over H columns.
template <int H>
__device__ __forceinline__ RowStats layernorm_stats(float k, float s1, float s2, float eps) {
  RowStats stats;
  const float m1 = s1 / static_cast<float>(H);
  stats.mean = k + m1;
  stats.rstd = rsqrtf(fmaxf(s2 / static_cast<float>(H) - m1 * m1, 0.f) + eps);
  return stats;
}

template <int H, int TPR, int VEC, int ROWS, bool CACHE, typename Program>
__device__ __forceinline__ void layernorm_rows(const Program& prog, long long rows, float eps) {
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

  if constexpr (CACHE) {
    typename Program::Chunk chunk[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c)) prog.load(row, c * kStep + first_col, chunk[c]);
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c)) {
        prog.pre(row, c * kStep + first_col, chunk[c]);
#pragma unroll
        for (int e = 0; e < VEC; ++e) sum += chunk[c].x[e];
      }
    const float mean = row_allreduce<TPR, ROWS>(sum, scratch_a, SumOp{}) / static_cast<float>(H);
    float squares = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c))
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float d = chunk[c].x[e] - mean;
          squares = fmaf(d, d, squares);
        }
    squares = row_allreduce<TPR, ROWS>(squares, scratch_b, SumOp{});
    RowStats stats;
    stats.mean = mean;
    stats.rstd = rsqrtf(squares / static_cast<float>(H) + eps);
#pragma unroll
    for (int c = 0; c < kChunks; ++c)
      if (owns(c)) prog.post(row, c * kStep + first_col, chunk[c], stats);
  } else {
    float s1 = 0.f, s2 = 0.f, k = 0.f;
    if (active) {
      k = layernorm_shift<VEC>(prog, row);
      layernorm_span_sums<TPR, VEC>(prog, row, G::lane(), 0, H, k, s1, s2);
    }
    s1 = row_allreduce<TPR, ROWS>(s1, scratch_a, SumOp{});
    s2 = row_allreduce<TPR, ROWS>(s2, scratch_b, SumOp{});
    const RowStats stats = layernorm_stats<H>(k, s1, s2, eps);
    if (active) layernorm_span_write<TPR, VEC>(prog, row, G::lane(), 0, H, stats);
  }
}

// Split form, launch 1: grid (rows, SPLIT), TPR threads. partial: [rows, SPLIT] shifted (sum, sum of squares).
template <int H, int TPR, int VEC, int SPLIT, typename Program>
__device__ __forceinline__ void layernorm_rows_stats(const Program& prog, long long rows, float2* partial) {
  using S = SplitSlice<H, VEC, SPLIT>;
  __shared__ float scratch_a[RowGeometry<TPR, 1>::kWarpsPerRow];
  __shared__ float scratch_b[RowGeometry<TPR, 1>::kWarpsPerRow];
  const long long row = blockIdx.x;
  const int split = blockIdx.y;
  if (row >= rows) return;  // whole block
  const float k = layernorm_shift<VEC>(prog, row);
  float s1 = 0.f, s2 = 0.f;
  layernorm_span_sums<TPR, VEC>(prog, row, threadIdx.x, S::begin(split), S::end(split), k, s1, s2);
  s1 = row_allreduce<TPR, 1>(s1, scratch_a, SumOp{});
  s2 = row_allreduce<TPR, 1>(s2, scratch_b, SumOp{});
  if (threadIdx.x == 0) partial[row * SPLIT + split] = make_float2(s1, s2);
}

// Split form, launch 2: grid (rows, SPLIT), TPR threads: the block folds the row's SPLIT partials,
// then writes its slice.
template <int H, int TPR, int VEC, int SPLIT, typename Program>
__device__ __forceinline__ void layernorm_rows_write(const Program& prog, long long rows, const float2* partial, float eps) {
  using S = SplitSlice<H, VEC, SPLIT>;
  __shared__ float scratch_a[RowGeometry<TPR, 1>::kWarpsPerRow];
  __shared__ float scratch_b[RowGeometry<TPR, 1>::kWarpsPerRow];
  const long long row = blockIdx.x;
  const int split = blockIdx.y;
  if (row >= rows) return;  // whole block
  float s1 = 0.f, s2 = 0.f;
  for (int j = threadIdx.x; j < SPLIT; j += TPR) {
    const float2 p = partial[row * SPLIT + j];
    s1 += p.x;
    s2 += p.y;
  }
  s1 = row_allreduce<TPR, 1>(s1, scratch_a, SumOp{});
  s2 = row_allreduce<TPR, 1>(s2, scratch_b, SumOp{});
  const RowStats stats = layernorm_stats<H>(layernorm_shift<VEC>(prog, row), s1, s2, eps);
  layernorm_span_write<TPR, VEC>(prog, row, threadIdx.x, S::begin(split), S::end(split), stats);
}

}  // namespace ac
