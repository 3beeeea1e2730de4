// Embedding family: out[t, :] = table[ids[t], :] for a table [V, H] and ids i32[T].
//
// A pure copy: TPR threads per row, ROWS rows per block, VEC elements (up to 16 bytes) per access,
// table rows streamed past L1 (each is read once per call). An id outside [0, V) cannot index the
// table; the row is filled with NaN instead of faulting or silently writing zeros, so the bad token
// poisons everything downstream and validation or the caller notices (the reference interpreter
// rejects such ids outright, so no valid result depends on this choice).
#pragma once

#include "rowwise.cuh"

namespace ac {

template <typename T>
struct EmbeddingParams {
  const T* table;   // [V, H]
  const int* ids;   // [T]
  T* out;           // [T, H]
  long long rows;   // tokens
  int vocab;        // V
};

template <typename T, int H, int TPR, int VEC, int ROWS>
__device__ __forceinline__ void embedding(const EmbeddingParams<T>& p) {
  using G = RowGeometry<TPR, ROWS>;
  static_assert(H % VEC == 0, "a vector never straddles a row");
  static_assert(sizeof(T) * VEC <= 16, "one access per vector");
  constexpr int kStep = TPR * VEC;
  const long long row = static_cast<long long>(blockIdx.x) * ROWS + G::row_in_block();
  if (row >= p.rows) return;  // no block-wide synchronization below
  const int id = p.ids[row];
  T* dst = p.out + row * H;
  if (id < 0 || id >= p.vocab) {
    float nan[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) nan[e] = __int_as_float(0x7fc00000);
    for (int col = G::lane() * VEC; col < H; col += kStep) store_vec<T, VEC>(dst + col, nan);
    return;
  }
  const T* src = p.table + static_cast<long long>(id) * H;
  // Batches of loads in flight before their stores: a row copy is all latency otherwise.
  using Raw = VecStore<T, VEC>;
  constexpr int kIters = (H + kStep - 1) / kStep;
  constexpr int kBatch = kIters < 4 ? kIters : 4;
#pragma unroll 1
  for (int base = 0; base < kIters; base += kBatch) {
    Raw buf[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int col = (base + b) * kStep + G::lane() * VEC;
      if (col < H) buf[b] = load_raw_stream<T, VEC>(src + col);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int col = (base + b) * kStep + G::lane() * VEC;
      if (col < H) *reinterpret_cast<Raw*>(dst + col) = buf[b];
    }
  }
}

}  // namespace ac
