// RMSNorm family: y = w * (x * rsqrt(mean(x^2) + eps)) over the last axis of [rows, H], alone or
// with pointwise ops around it (residual add before, cast or gating after).
//
// One row per TPR threads (a warp or part of one for small H, up to a whole block), ROWS rows per
// block. H is a template parameter, so each thread's share of the row (H / (TPR * VEC) chunks of
// VEC columns, 16-byte accesses) stays in registers between the sum of squares and the scaling:
// the row is read once and written once. Squares accumulate in fp32. All loads of a thread are
// issued before any arithmetic, so a thread keeps its whole share of the row in flight.
#pragma once

#include "rowwise.cuh"

namespace ac {

// The row engine: any Program of the shape described in rowwise.cuh whose Chunk carries x[VEC].
template <int H, int TPR, int VEC, int ROWS, typename Program>
__device__ __forceinline__ void rmsnorm_rows(const Program& prog, long long rows, float eps) {
  using G = RowGeometry<TPR, ROWS>;
  constexpr int kStep = TPR * VEC;
  constexpr int kChunks = (H + kStep - 1) / kStep;
  static_assert(H % VEC == 0, "a vector never straddles a row");
  __shared__ float scratch[ROWS * G::kWarpsPerRow];
  const long long row = static_cast<long long>(blockIdx.x) * ROWS + G::row_in_block();
  const bool active = row < rows;  // inactive threads still join the block's reductions
  const int first_col = G::lane() * VEC;
  auto owns = [&](int c) { return active && (H % kStep == 0 || c * kStep + first_col < H); };

  typename Program::Chunk chunk[kChunks];
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if (owns(c)) prog.load(row, c * kStep + first_col, chunk[c]);
  float squares = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if (owns(c)) {
      prog.pre(row, c * kStep + first_col, chunk[c]);
#pragma unroll
      for (int e = 0; e < VEC; ++e) squares = fmaf(chunk[c].x[e], chunk[c].x[e], squares);
    }
  squares = row_allreduce<TPR, ROWS>(squares, scratch, SumOp{});
  RowStats stats;
  stats.inv_rms = rsqrtf(squares / static_cast<float>(H) + eps);
#pragma unroll
  for (int c = 0; c < kChunks; ++c)
    if (owns(c)) prog.post(row, c * kStep + first_col, chunk[c], stats);
}

// The plain region (one rmsnorm, x, w and y of one dtype): a fixed program over a typed params struct.
// The weights may also be f32 with 16-bit x (W; the cuBLAS fallback's norm prologue for Gemma's 1 + w).
template <typename T, typename W = T>
struct RmsNormParams {
  const T* x;  // [rows, H]
  const W* w;  // [H]
  T* y;        // [rows, H]
  long long rows;
  float eps;
};

template <typename T, int H, int VEC, typename W = T>
struct RmsNormProgram {
  const T* x;
  const W* w;
  T* y;
  struct Chunk {
    float x[VEC];
    float w[VEC];
  };
  __device__ __forceinline__ void load(long long row, int col, Chunk& c) const {
    load_vec<T, VEC>(x + row * H + col, c.x);
    load_vec<W, VEC>(w + col, c.w);
  }
  __device__ __forceinline__ void pre(long long, int, Chunk&) const {}
  __device__ __forceinline__ void post(long long row, int col, const Chunk& c, const RowStats& s) const {
    float out[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) out[e] = c.w[e] * (c.x[e] * s.inv_rms);  // the reference's order
    store_vec<T, VEC>(y + row * H + col, out);
  }
};

template <typename T, int H, int TPR, int VEC, int ROWS, typename W = T>
__device__ __forceinline__ void rmsnorm(const RmsNormParams<T, W>& p) {
  rmsnorm_rows<H, TPR, VEC, ROWS>(RmsNormProgram<T, H, VEC, W>{p.x, p.w, p.y}, p.rows, p.eps);
}

}  // namespace ac
