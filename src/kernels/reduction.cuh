// Reduction family: reduce_sum / max / min / mean / prod and argmax / argmin over the last axis of
// [rows, H], possibly after pointwise ops, one value per row.
//
// TPR threads per row stream the row in VEC-column chunks (nothing is kept: each element is used
// once), accumulate in the program's Acc type (fp32; int for sum / max / min / prod of i32 values,
// which wrap around like the reference's int32), and combine across the row with shuffles and, for
// rows wider than a warp, shared memory. Max and min propagate NaN; argmax (argmin) prefers NaN, then the larger
// (smaller) value, then the lower index, exactly as the reference interpreter does.
//
// Few long rows (argmax over a vocabulary) leave most of the GPU idle with one block per row, so
// the split form runs two launches: reduce_rows_partial gives each row SPLIT blocks, one slice of
// columns each, writing a (value, index) partial to the workspace; reduce_rows_combine folds a
// row's partials with one warp and stores the result.
#pragma once

#include "rowwise.cuh"

namespace ac {

// A program's accumulator type: its Acc (int for integer reductions), else fp32.
template <typename Program, typename = void>
struct RowAccOf {
  using type = float;
};
template <typename Program>
struct RowAccOf<Program, decltype(void(sizeof(typename Program::Acc)))> {
  using type = typename Program::Acc;
};
template <typename Program>
using RowAcc = typename RowAccOf<Program>::type;

enum RowReduction { kRowSum = 0, kRowMax = 1, kRowMean = 2, kRowArgmax = 3, kRowMin = 4, kRowProd = 5, kRowArgmin = 6 };

template <int OP> constexpr bool is_arg_reduction() { return OP == kRowArgmax || OP == kRowArgmin; }

template <int OP>
__device__ __forceinline__ void reduce_init(float& acc, int& best) {
  acc = (OP == kRowMax || OP == kRowArgmax) ? neg_inf() : (OP == kRowMin || OP == kRowArgmin) ? -neg_inf() : OP == kRowProd ? 1.f : 0.f;
  best = 0x7fffffff;
}
template <int OP>
__device__ __forceinline__ void reduce_init(int& acc, int& best) {
  static_assert(!is_arg_reduction<OP>() && OP != kRowMean, "integer rows take sum, max, min and prod");
  acc = OP == kRowMax ? -2147483647 - 1 : OP == kRowMin ? 2147483647 : OP == kRowProd ? 1 : 0;
  best = 0x7fffffff;
}

// Folds element (v, i) into (acc, best); also folds another thread's partial (the same order).
template <int OP, typename Acc>
__device__ __forceinline__ void reduce_step(Acc v, int i, Acc& acc, int& best) {
  if (OP == kRowSum || OP == kRowMean) acc = SumOp{}(acc, v);
  if (OP == kRowMax) acc = MaxOp{}(acc, v);
  if (OP == kRowMin) acc = MinOp{}(acc, v);
  if (OP == kRowProd) acc = ProdOp{}(acc, v);
  if constexpr (is_arg_reduction<OP>()) {
    if (arg_better<OP == kRowArgmin>(v, i, acc, best)) {
      acc = v;
      best = i;
    }
  }
}

// A partial's value as the float bits of the split form's (value, index) pairs, and back (the
// second argument names the accumulator type).
__device__ __forceinline__ float partial_bits(float v) { return v; }
__device__ __forceinline__ float partial_bits(int v) { return __int_as_float(v); }
__device__ __forceinline__ float from_partial_bits(float bits, float) { return bits; }
__device__ __forceinline__ int from_partial_bits(float bits, int) { return __float_as_int(bits); }

// This thread's share of columns [begin, end) of `row` (begin and end multiples of VEC).
template <int TPR, int VEC, int OP, typename Program>
__device__ __forceinline__ void reduce_span(const Program& prog, long long row, int lane, int begin, int end, RowAcc<Program>& acc,
                                            int& best) {
#pragma unroll 4
  for (int col = begin + lane * VEC; col < end; col += TPR * VEC) {
    typename Program::Chunk chunk;
    prog.load(row, col, chunk);
    prog.pre(row, col, chunk);
#pragma unroll
    for (int e = 0; e < VEC; ++e) reduce_step<OP>(chunk.x[e], col + e, acc, best);
  }
}

// Combines (acc, best) over the TPR threads of a row; every thread of the row gets the result.
template <int TPR, int ROWS, int OP, typename Acc>
__device__ __forceinline__ void reduce_across_row(Acc& acc, int& best, Acc* scratch_v, int* scratch_i) {
  if constexpr (is_arg_reduction<OP>()) {
    row_argmax<TPR, ROWS, OP == kRowArgmin>(acc, best, scratch_v, scratch_i);
  } else if (OP == kRowMax) {
    acc = row_allreduce<TPR, ROWS>(acc, scratch_v, MaxOp{});
  } else if (OP == kRowMin) {
    acc = row_allreduce<TPR, ROWS>(acc, scratch_v, MinOp{});
  } else if (OP == kRowProd) {
    acc = row_allreduce<TPR, ROWS>(acc, scratch_v, ProdOp{});
  } else {
    acc = row_allreduce<TPR, ROWS>(acc, scratch_v, SumOp{});
  }
}

// One launch: TPR threads per row, ROWS rows per block. Program::store(row, value, index) writes
// the row's result (index is meaningful for argmax).
template <int H, int TPR, int VEC, int ROWS, int OP, typename Program>
__device__ __forceinline__ void reduce_rows(const Program& prog, long long rows) {
  using G = RowGeometry<TPR, ROWS>;
  static_assert(H % VEC == 0, "a vector never straddles a row");
  using Acc = RowAcc<Program>;
  __shared__ Acc scratch_v[ROWS * G::kWarpsPerRow];
  __shared__ int scratch_i[is_arg_reduction<OP>() ? ROWS * G::kWarpsPerRow : 1];
  const long long row = static_cast<long long>(blockIdx.x) * ROWS + G::row_in_block();
  const bool active = row < rows;  // inactive threads still join the block's reductions
  Acc acc;
  int best;
  reduce_init<OP>(acc, best);
  if (active) reduce_span<TPR, VEC, OP>(prog, row, G::lane(), 0, H, acc, best);
  reduce_across_row<TPR, ROWS, OP>(acc, best, scratch_v, scratch_i);
  if constexpr (OP == kRowMean) acc = acc / static_cast<float>(H);
  if (active && G::lane() == 0) prog.store(row, acc, best);
}

// Split form, launch 1: grid (rows, SPLIT), TPR threads. partial: [rows, SPLIT] (value, index bits).
template <int H, int TPR, int VEC, int SPLIT, int OP, typename Program>
__device__ __forceinline__ void reduce_rows_partial(const Program& prog, long long rows, float2* partial) {
  using S = SplitSlice<H, VEC, SPLIT>;
  using Acc = RowAcc<Program>;
  __shared__ Acc scratch_v[RowGeometry<TPR, 1>::kWarpsPerRow];
  __shared__ int scratch_i[is_arg_reduction<OP>() ? RowGeometry<TPR, 1>::kWarpsPerRow : 1];
  const long long row = blockIdx.x;
  const int split = blockIdx.y;
  if (row >= rows) return;  // whole block: no barrier is skipped by part of it
  Acc acc;
  int best;
  reduce_init<OP>(acc, best);
  reduce_span<TPR, VEC, OP>(prog, row, threadIdx.x, S::begin(split), S::end(split), acc, best);
  reduce_across_row<TPR, 1, OP>(acc, best, scratch_v, scratch_i);
  if (threadIdx.x == 0) partial[row * SPLIT + split] = make_float2(partial_bits(acc), __int_as_float(best));
}

// Split form, launch 2: grid (rows), one warp per row folds the row's SPLIT partials.
template <int H, int SPLIT, int OP, typename Program>
__device__ __forceinline__ void reduce_rows_combine(const Program& prog, long long rows, const float2* partial) {
  using Acc = RowAcc<Program>;
  const long long row = blockIdx.x;
  if (row >= rows) return;
  Acc acc;
  int best;
  reduce_init<OP>(acc, best);
  for (int s = threadIdx.x; s < SPLIT; s += 32) {
    const float2 p = partial[row * SPLIT + s];
    reduce_step<OP>(from_partial_bits(p.x, acc), __float_as_int(p.y), acc, best);
  }
  reduce_across_row<32, 1, OP>(acc, best, static_cast<Acc*>(nullptr), nullptr);
  if constexpr (OP == kRowMean) acc = acc / static_cast<float>(H);
  if (threadIdx.x == 0) prog.store(row, acc, best);
}

}  // namespace ac
