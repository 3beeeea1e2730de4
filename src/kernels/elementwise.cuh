// Elementwise family: a chain of pointwise ops (add, sub, mul, div, silu, exp, neg, cast) with
// numpy broadcasting, over an iteration space of [rows, COLS].
//
// The op chain is generated straight-line code (a Program, see rowwise.cuh; no row op, so pre()
// does all the work and stores). Each thread takes UNROLL chunks of VEC columns, THREADS apart, and
// issues every load of its chunks before any arithmetic. COLS % VEC == 0, so a chunk never straddles
// a row and operands broadcast along the columns are read once per chunk.
#pragma once

#include "rowwise.cuh"

namespace ac {

template <int COLS, int VEC, int THREADS, int UNROLL, typename Program>
__device__ __forceinline__ void elementwise(const Program& prog, long long rows) {
  static_assert(COLS % VEC == 0, "a vector never straddles a row");
  constexpr long long kPerRow = COLS / VEC;
  const long long total = rows * kPerRow;
  const long long first = static_cast<long long>(blockIdx.x) * (THREADS * UNROLL) + threadIdx.x;
  typename Program::Chunk chunk[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long i = first + static_cast<long long>(u) * THREADS;
    if (i < total) prog.load(i / kPerRow, static_cast<int>(i % kPerRow) * VEC, chunk[u]);
  }
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) {
    const long long i = first + static_cast<long long>(u) * THREADS;
    if (i < total) prog.pre(i / kPerRow, static_cast<int>(i % kPerRow) * VEC, chunk[u]);
  }
}

}  // namespace ac
