// Column family: a reduction (sum, max, min, mean, prod, argmax, argmin) or a scan (cumsum,
// cumprod) along a leading axis, the input viewed as [outer, N, inner rows, COLS], with pointwise
// ops before it, as a generated row program (rowwise.cuh) whose rows are the flattened leading dims.
//
// One thread owns VEC adjacent columns of one output row (an (outer, inner) pair) and walks the N
// rows of the axis in order: consecutive threads take consecutive columns, so every step of the walk
// is one coalesced access per warp, and a thread keeps VEC independent accumulators. A reduction
// stores VEC results through Program::store_cols; a scan writes each row as it goes (post()). Few
// output columns and a long axis (a batch statistic: [16384, 4096] over axis 0) leave the GPU idle,
// so reductions have a split form: SPLIT blocks walk a slice of the axis each and write
// (value, index) partials to the workspace, and a second launch folds them in slice order.
#pragma once

#include "reduction.cuh"
#include "scan.cuh"

namespace ac {

// Where one thread works: its output row (outer * INNER + inner) and first column.
template <int COLS, int VEC, int INNER>
struct ColumnItem {
  long long out_row;
  int col;
  long long outer;
  long long inner;
  __device__ __forceinline__ static bool at(long long item, long long out_rows, ColumnItem& it) {
    constexpr long long kVectors = COLS / VEC;
    it.out_row = item / kVectors;
    if (it.out_row >= out_rows) return false;
    it.col = static_cast<int>(item % kVectors) * VEC;
    it.outer = it.out_row / INNER;
    it.inner = it.out_row % INNER;
    return true;
  }
  // The program row of step k of the walk.
  template <int N>
  __device__ __forceinline__ long long row(long long k) const { return (outer * N + k) * INNER + inner; }
};

// Rows of the walk loaded together: stores through the program (side outputs, a scan's results)
// may alias its loads, so the compiler keeps loads behind earlier stores; a batch puts kBatch loads
// in flight at once.
constexpr int kColumnBatch = 4;

// Folds rows [begin, end) of the axis into VEC accumulators, in order.
template <int N, int COLS, int VEC, int INNER, int OP, typename Program>
__device__ __forceinline__ void columns_span(const Program& prog, const ColumnItem<COLS, VEC, INNER>& it, int begin, int end,
                                             float (&acc)[VEC], int (&best)[VEC]) {
  for (int k0 = begin; k0 < end; k0 += kColumnBatch) {
    typename Program::Chunk chunk[kColumnBatch];
#pragma unroll
    for (int b = 0; b < kColumnBatch; ++b)
      if (k0 + b < end) prog.load(it.template row<N>(k0 + b), it.col, chunk[b]);
#pragma unroll
    for (int b = 0; b < kColumnBatch; ++b)
      if (k0 + b < end) {
        prog.pre(it.template row<N>(k0 + b), it.col, chunk[b]);
#pragma unroll
        for (int e = 0; e < VEC; ++e) reduce_step<OP>(chunk[b].x[e], k0 + b, acc[e], best[e]);
      }
  }
}

// One launch: THREADS threads per block, one item (output row, VEC columns) per thread.
template <int N, int COLS, int VEC, int INNER, int THREADS, int OP, typename Program>
__device__ __forceinline__ void reduce_columns(const Program& prog, long long out_rows) {
  static_assert(COLS % VEC == 0, "a vector never straddles a row");
  ColumnItem<COLS, VEC, INNER> it;
  if (!ColumnItem<COLS, VEC, INNER>::at(static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x, out_rows, it)) return;
  float acc[VEC];
  int best[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) reduce_init<OP>(acc[e], best[e]);
  columns_span<N, COLS, VEC, INNER, OP>(prog, it, 0, N, acc, best);
#pragma unroll
  for (int e = 0; e < VEC; ++e)
    if (OP == kRowMean) acc[e] = acc[e] / static_cast<float>(N);
  prog.store_cols(it.out_row, it.col, acc, best);
}

// Split form, launch 1: grid (items / THREADS, SPLIT). partial: [SPLIT, out_rows, COLS] (value, index bits).
template <int N, int COLS, int VEC, int INNER, int THREADS, int SPLIT, int OP, typename Program>
__device__ __forceinline__ void reduce_columns_partial(const Program& prog, long long out_rows, float2* partial) {
  ColumnItem<COLS, VEC, INNER> it;
  if (!ColumnItem<COLS, VEC, INNER>::at(static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x, out_rows, it)) return;
  constexpr int kSlice = (N + SPLIT - 1) / SPLIT;
  const int split = blockIdx.y;
  float acc[VEC];
  int best[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) reduce_init<OP>(acc[e], best[e]);
  columns_span<N, COLS, VEC, INNER, OP>(prog, it, min(N, split * kSlice), min(N, (split + 1) * kSlice), acc, best);
  float2* out = partial + (static_cast<long long>(split) * out_rows + it.out_row) * COLS + it.col;
#pragma unroll
  for (int e = 0; e < VEC; ++e) out[e] = make_float2(acc[e], __int_as_float(best[e]));
}

// Split form, launch 2: one item per thread folds its SPLIT partials in slice order.
template <int N, int COLS, int VEC, int INNER, int THREADS, int SPLIT, int OP, typename Program>
__device__ __forceinline__ void reduce_columns_combine(const Program& prog, long long out_rows, const float2* partial) {
  ColumnItem<COLS, VEC, INNER> it;
  if (!ColumnItem<COLS, VEC, INNER>::at(static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x, out_rows, it)) return;
  float acc[VEC];
  int best[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) reduce_init<OP>(acc[e], best[e]);
  for (int s = 0; s < SPLIT; ++s) {
    const float2* in = partial + (static_cast<long long>(s) * out_rows + it.out_row) * COLS + it.col;
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      const float2 p = in[e];
      reduce_step<OP>(p.x, __float_as_int(p.y), acc[e], best[e]);
    }
  }
#pragma unroll
  for (int e = 0; e < VEC; ++e)
    if (OP == kRowMean) acc[e] = acc[e] / static_cast<float>(N);
  prog.store_cols(it.out_row, it.col, acc, best);
}

// A scan along the axis: each thread carries VEC running values down its columns.
template <int N, int COLS, int VEC, int INNER, int THREADS, int OP, typename Program>
__device__ __forceinline__ void scan_columns(const Program& prog, long long out_rows) {
  static_assert(COLS % VEC == 0, "a vector never straddles a row");
  ColumnItem<COLS, VEC, INNER> it;
  if (!ColumnItem<COLS, VEC, INNER>::at(static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x, out_rows, it)) return;
  const RowStats stats;
  float carry[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) carry[e] = scan_identity<OP>();
  for (int k0 = 0; k0 < N; k0 += kColumnBatch) {
    typename Program::Chunk chunk[kColumnBatch];
#pragma unroll
    for (int b = 0; b < kColumnBatch; ++b)
      if (k0 + b < N) prog.load(it.template row<N>(k0 + b), it.col, chunk[b]);
#pragma unroll
    for (int b = 0; b < kColumnBatch; ++b)
      if (k0 + b < N) {
        const long long row = it.template row<N>(k0 + b);
        prog.pre(row, it.col, chunk[b]);
#pragma unroll
        for (int e = 0; e < VEC; ++e) chunk[b].x[e] = carry[e] = scan_apply<OP>(carry[e], chunk[b].x[e]);
        prog.post(row, it.col, chunk[b], stats);
      }
  }
}

}  // namespace ac
