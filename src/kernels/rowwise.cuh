// Device code shared by the row-wise families (rmsnorm, softmax, reduction, elementwise, embedding):
// vector loads and stores of VEC elements of any activation dtype to and from fp32 registers, and
// reductions across the threads that own one row.
//
// Row geometry: a block holds ROWS rows of TPR threads each (TPR * ROWS threads, a multiple of 32).
// The threads of a row are consecutive, so a row of TPR <= 32 threads lives inside one warp and
// reduces with shuffles alone; wider rows reduce per warp, then through shared memory.
//
// Generated row programs (see codegen/renderers/row_program_code.cpp) plug into the engines as a
// `Program` type: a Chunk struct (the VEC-column values a thread holds, x[VEC] among them) and
//   load(row, col, Chunk&)                 reads every operand of VEC columns at `col`
//   pre(row, col, Chunk&)                  computes the ops before the row op, stores their outputs and
//                                          sets Chunk::x[VEC], the row op's input
//   post(row, col, Chunk&, RowStats)       computes the row op's result and the ops after it, stores
//                                          (rmsnorm and softmax)
//   store(row, value, index)               writes a reduction's result for the row (reductions)
#pragma once

#include "common.cuh"

namespace ac {

// What a row op learned about its row: rmsnorm's 1/rms, softmax's max and 1/sum.
struct RowStats {
  float inv_rms;
  float max;
  float inv_sum;
};

// Raw storage of VEC elements of T, aligned to the access size (at most 16 bytes per access).
template <typename T, int VEC> struct alignas(sizeof(T) * VEC >= 16 ? 16 : sizeof(T) * VEC) VecStore {
  T v[VEC];
};

// Reads VEC consecutive elements at p (aligned to sizeof(T) * VEC, or 16 bytes when larger) into fp32.
template <typename T, int VEC>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[VEC]) {
  constexpr int kBytes = sizeof(T) * VEC;
  if constexpr (kBytes >= 16) {
    constexpr int kPer = 16 / sizeof(T);
#pragma unroll
    for (int part = 0; part < VEC / kPer; ++part) {
      const uint4 raw = *reinterpret_cast<const uint4*>(p + part * kPer);
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int i = 0; i < kPer; ++i) out[part * kPer + i] = to_float(e[i]);
    }
  } else {
    const VecStore<T, VEC> raw = *reinterpret_cast<const VecStore<T, VEC>*>(p);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = to_float(raw.v[i]);
  }
}

// VEC elements (at most 16 bytes) of data read exactly once (an embedding row): kept out of L1.
template <typename T, int VEC>
__device__ __forceinline__ VecStore<T, VEC> load_raw_stream(const T* src) {
  static_assert(sizeof(T) * VEC <= 16, "one access per vector");
  VecStore<T, VEC> raw;
  if constexpr (sizeof(T) * VEC == 16) {
    *reinterpret_cast<uint4*>(&raw) = load_stream16(src);
  } else {
    raw = *reinterpret_cast<const VecStore<T, VEC>*>(src);
  }
  return raw;
}

// Writes VEC fp32 values as T at p (same alignment as load_vec), rounding to nearest even.
template <typename T, int VEC>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[VEC]) {
  VecStore<T, VEC> raw;
#pragma unroll
  for (int i = 0; i < VEC; ++i) raw.v[i] = from_float<T>(in[i]);
  constexpr int kBytes = sizeof(T) * VEC;
  if constexpr (kBytes >= 16) {
#pragma unroll
    for (int part = 0; part < kBytes / 16; ++part)
      reinterpret_cast<uint4*>(p)[part] = reinterpret_cast<const uint4*>(&raw)[part];
  } else {
    *reinterpret_cast<VecStore<T, VEC>*>(p) = raw;
  }
}

// One element of T broadcast to VEC lanes (an operand broadcast along the columns).
template <typename T, int VEC>
__device__ __forceinline__ void load_splat(const T* p, float (&out)[VEC]) {
  const float v = to_float(*p);
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = v;
}

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// Max that propagates NaN, as torch.max and the reference interpreter do.
__device__ __forceinline__ float nan_max(float a, float b) { return (b > a || b != b) ? b : a; }

// Argmax order: a NaN beats every number, a larger value beats a smaller one, ties go to the
// lower index (the reference interpreter's order).
__device__ __forceinline__ bool argmax_better(float v, int i, float best_v, int best_i) {
  const bool v_nan = v != v, best_nan = best_v != best_v;
  if (v_nan != best_nan) return v_nan;
  if (v_nan) return i < best_i;
  return v > best_v || (v == best_v && i < best_i);
}

struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return nan_max(a, b); }
};

// Threads per row and rows per block of a row engine.
template <int TPR, int ROWS>
struct RowGeometry {
  static_assert(TPR >= 1 && (TPR & (TPR - 1)) == 0, "threads per row must be a power of two");
  static_assert((TPR * ROWS) % 32 == 0, "a block must be whole warps");
  static constexpr int kThreads = TPR * ROWS;
  static constexpr int kWarpsPerRow = TPR >= 32 ? TPR / 32 : 1;
  __device__ __forceinline__ static int row_in_block() { return threadIdx.x / TPR; }
  __device__ __forceinline__ static int lane() { return threadIdx.x % TPR; }
};

// Columns [begin, end) of slice `split` when SPLIT blocks share a row (split forms of the
// reduction and softmax families): slices are multiples of VEC.
template <int H, int VEC, int SPLIT>
struct SplitSlice {
  static constexpr int kCols = ((H + SPLIT - 1) / SPLIT + VEC - 1) / VEC * VEC;
  __device__ __forceinline__ static int begin(int split) { return min(H, split * kCols); }
  __device__ __forceinline__ static int end(int split) { return min(H, (split + 1) * kCols); }
};

// Reduces v over the TPR threads of this thread's row; every thread of the row gets the result.
// `scratch` holds ROWS * kWarpsPerRow floats. Every thread of the block must call it.
template <int TPR, int ROWS, typename Op>
__device__ __forceinline__ float row_allreduce(float v, float* scratch, Op op) {
  constexpr int kWidth = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if constexpr (TPR > 32) {
    using G = RowGeometry<TPR, ROWS>;
    constexpr int kWarps = G::kWarpsPerRow;
    const int row = G::row_in_block(), warp = G::lane() / 32, lane = threadIdx.x % 32;
    if (lane == 0) scratch[row * kWarps + warp] = v;
    __syncthreads();
    v = scratch[row * kWarps];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) v = op(v, scratch[row * kWarps + w]);
    __syncthreads();  // scratch may be reused by the next reduction
  }
  return v;
}

// Argmax over the threads of a row: (value, index) pairs; every thread of the row gets the winner.
template <int TPR, int ROWS>
__device__ __forceinline__ void row_argmax(float& v, int& i, float* scratch_v, int* scratch_i) {
  constexpr int kWidth = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, i, offset);
    if (argmax_better(ov, oi, v, i)) { v = ov; i = oi; }
  }
  if constexpr (TPR > 32) {
    using G = RowGeometry<TPR, ROWS>;
    constexpr int kWarps = G::kWarpsPerRow;
    const int row = G::row_in_block(), warp = G::lane() / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
      scratch_v[row * kWarps + warp] = v;
      scratch_i[row * kWarps + warp] = i;
    }
    __syncthreads();
    v = scratch_v[row * kWarps];
    i = scratch_i[row * kWarps];
#pragma unroll
    for (int w = 1; w < kWarps; ++w)
      if (argmax_better(scratch_v[row * kWarps + w], scratch_i[row * kWarps + w], v, i)) {
        v = scratch_v[row * kWarps + w];
        i = scratch_i[row * kWarps + w];
      }
    __syncthreads();
  }
}

// Online (max, sum of exp(x - max)) pairs combined over the threads of a row (softmax without a
// register-resident row).
template <int TPR, int ROWS>
__device__ __forceinline__ void row_softmax_stats(float& m, float& s, float* scratch_m, float* scratch_s) {
  auto merge = [](float& m, float& s, float om, float os) {
    const float nm = nan_max(m, om);
    // exp(-inf - -inf) is NaN: a side that has seen nothing contributes nothing.
    const float a = m == neg_inf() ? 0.f : s * __expf(m - nm);
    const float b = om == neg_inf() ? 0.f : os * __expf(om - nm);
    m = nm;
    s = a + b;
  };
  constexpr int kWidth = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
    const float om = __shfl_xor_sync(0xffffffffu, m, offset);
    const float os = __shfl_xor_sync(0xffffffffu, s, offset);
    merge(m, s, om, os);
  }
  if constexpr (TPR > 32) {
    using G = RowGeometry<TPR, ROWS>;
    constexpr int kWarps = G::kWarpsPerRow;
    const int row = G::row_in_block(), warp = G::lane() / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
      scratch_m[row * kWarps + warp] = m;
      scratch_s[row * kWarps + warp] = s;
    }
    __syncthreads();
    m = scratch_m[row * kWarps];
    s = scratch_s[row * kWarps];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) merge(m, s, scratch_m[row * kWarps + w], scratch_s[row * kWarps + w]);
    __syncthreads();
  }
}

}  // namespace ac
