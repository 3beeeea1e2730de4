// Device code shared by the row-wise families (rmsnorm, layernorm, softmax, reduction, scan,
// elementwise, embedding): vector loads and stores of VEC elements of any dtype to and from registers
// (fp32 for the float dtypes, int for i32, bool for bool), and reductions across the threads that
// own one row.
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
//                                          (norms, softmax, scans: a scan engine first writes the
//                                          scanned values into Chunk::x)
//   store(row, value, index)               writes a reduction's result for the row (reductions)
//   store_cols(row, col, values, indices)  writes VEC results of a reduction over a leading axis
#pragma once

#include "common.cuh"
#include "pointwise.cuh"

namespace ac {

// What a row op learned about its row: rmsnorm's 1/rms, layer_norm's mean and 1/std, softmax's max,
// 1/sum and log(sum).
struct RowStats {
  float inv_rms = 0.f;
  float max = 0.f;
  float inv_sum = 0.f;
  float log_sum = 0.f;
  float mean = 0.f;
  float rstd = 0.f;
};

// Registers of each storage type: fp32 for the float dtypes, int for i32, bool for bool (a byte).
__device__ __forceinline__ float to_reg(float v) { return v; }
__device__ __forceinline__ float to_reg(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_reg(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ int to_reg(int v) { return v; }
__device__ __forceinline__ bool to_reg(unsigned char v) { return v != 0; }

template <typename T> struct Storage;
template <> struct Storage<float> { __device__ __forceinline__ static float put(float v) { return v; } };
template <> struct Storage<__half> { __device__ __forceinline__ static __half put(float v) { return __float2half_rn(v); } };
template <> struct Storage<__nv_bfloat16> {
  __device__ __forceinline__ static __nv_bfloat16 put(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Storage<int> { __device__ __forceinline__ static int put(int v) { return v; } };
template <> struct Storage<unsigned char> {
  __device__ __forceinline__ static unsigned char put(bool v) { return v ? 1 : 0; }
};

// Raw storage of VEC elements of T, aligned to the access size (at most 16 bytes per access).
template <typename T, int VEC> struct alignas(sizeof(T) * VEC >= 16 ? 16 : sizeof(T) * VEC) VecStore {
  T v[VEC];
};

// Reads VEC consecutive elements at p (aligned to sizeof(T) * VEC, or 16 bytes when larger) into
// registers (R: fp32 for float dtypes).
template <typename T, int VEC, typename R>
__device__ __forceinline__ void load_vec(const T* p, R (&out)[VEC]) {
  constexpr int kBytes = sizeof(T) * VEC;
  if constexpr (kBytes >= 16) {
    constexpr int kPer = 16 / sizeof(T);
#pragma unroll
    for (int part = 0; part < VEC / kPer; ++part) {
      const uint4 raw = *reinterpret_cast<const uint4*>(p + part * kPer);
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int i = 0; i < kPer; ++i) out[part * kPer + i] = to_reg(e[i]);
    }
  } else {
    const VecStore<T, VEC> raw = *reinterpret_cast<const VecStore<T, VEC>*>(p);
#pragma unroll
    for (int i = 0; i < VEC; ++i) out[i] = to_reg(raw.v[i]);
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

// Writes VEC registers as T at p (same alignment as load_vec), rounding floats to nearest even.
template <typename T, int VEC, typename R>
__device__ __forceinline__ void store_vec(T* p, const R (&in)[VEC]) {
  VecStore<T, VEC> raw;
#pragma unroll
  for (int i = 0; i < VEC; ++i) raw.v[i] = Storage<T>::put(in[i]);
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
template <typename T, int VEC, typename R>
__device__ __forceinline__ void load_splat(const T* p, R (&out)[VEC]) {
  const R v = to_reg(*p);
#pragma unroll
  for (int i = 0; i < VEC; ++i) out[i] = v;
}

// Argmax order: a NaN beats every number, a larger value beats a smaller one, ties go to the
// lower index (the reference interpreter's order). Argmin: the same with smaller.
__device__ __forceinline__ bool argmax_better(float v, int i, float best_v, int best_i) {
  const bool v_nan = v != v, best_nan = best_v != best_v;
  if (v_nan != best_nan) return v_nan;
  if (v_nan) return i < best_i;
  return v > best_v || (v == best_v && i < best_i);
}
__device__ __forceinline__ bool argmin_better(float v, int i, float best_v, int best_i) {
  const bool v_nan = v != v, best_nan = best_v != best_v;
  if (v_nan != best_nan) return v_nan;
  if (v_nan) return i < best_i;
  return v < best_v || (v == best_v && i < best_i);
}

// Combining operators of row reductions, for fp32 (max and min propagate NaN) and for the int
// accumulators of integer reductions (sums and products wrap around like the reference's int32).
struct SumOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  __device__ __forceinline__ int operator()(int a, int b) const { return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b)); }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return nan_max(a, b); }
  __device__ __forceinline__ int operator()(int a, int b) const { return max(a, b); }
};
struct MinOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return nan_min(a, b); }
  __device__ __forceinline__ int operator()(int a, int b) const { return min(a, b); }
};
struct ProdOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a * b; }
  __device__ __forceinline__ int operator()(int a, int b) const { return static_cast<int>(static_cast<unsigned>(a) * static_cast<unsigned>(b)); }
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
// `scratch` holds ROWS * kWarpsPerRow values of v's type (float, or int for integer reductions).
// Every thread of the block must call it.
template <int TPR, int ROWS, typename V, typename Op>
__device__ __forceinline__ V row_allreduce(V v, V* scratch, Op op) {
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

template <bool MIN>
__device__ __forceinline__ bool arg_better(float v, int i, float best_v, int best_i) {
  return MIN ? argmin_better(v, i, best_v, best_i) : argmax_better(v, i, best_v, best_i);
}

// Argmax (argmin with MIN) over the threads of a row: (value, index) pairs; every thread of the row
// gets the winner.
template <int TPR, int ROWS, bool MIN = false>
__device__ __forceinline__ void row_argmax(float& v, int& i, float* scratch_v, int* scratch_i) {
  constexpr int kWidth = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int offset = kWidth / 2; offset > 0; offset >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const int oi = __shfl_xor_sync(0xffffffffu, i, offset);
    if (arg_better<MIN>(ov, oi, v, i)) { v = ov; i = oi; }
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
      if (arg_better<MIN>(scratch_v[row * kWarps + w], scratch_i[row * kWarps + w], v, i)) {
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
