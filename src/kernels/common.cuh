// Shared device code of every kernel family: the region calling convention, dtype conversion,
// vector loads and warp reductions. Header-only; compiled by NVRTC (and nvcc for emitted libraries).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ac {

// The one calling convention of generated kernels. The runtime binds a region site's buffers by
// interface slot (inputs, outputs, weights and written states, each in the order the analyzer
// lists them); the generated wrapper maps slots to the family's roles. Passed by value. An output
// that a kv_append returns is the state buffer itself. Mirrored on the host by tune/region_args.h.
struct RegionArgs {
  const void* in[8];
  void* out[8];
  const void* w[8];
  void* state[4];
  void* workspace;
  int T;  // tokens in this call
  int L;  // rows allocated in each KV-cache state
};
// The first position of a call is a region input (an i32 scalar in device memory, read on the
// device so a captured CUDA graph replays with the current position).

// Programmatic dependent launch (sm_90+): a kernel launched with programmatic stream serialization
// may begin while the kernel before it is still running; this blocks until that grid has completed
// and its writes are visible. Generated kernels call it before they read an activation or write
// anything (codegen inserts it first, unless the family's template places it after loads of constant
// weights). Without the launch attribute, or below sm_90, it costs nothing.
__device__ __forceinline__ void wait_for_producer_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The other half: lets the next kernel in the stream (when launched with the attribute) begin its
// launch once every block of this grid has called it or exited. Its blocks then take free SM slots and
// run up to their own wait, which still blocks until this whole grid has finished and flushed; so
// calling it early is safe, and what a consumer does before its wait (loading weights) overlaps this
// kernel. It takes effect only once every block of this grid has called it, so every block is already
// resident then and the consumer's early blocks never keep this grid's blocks from being scheduled.
// Most kernels call it right after their wait; the decode GEMVs call it before (gemv.cuh).
__device__ __forceinline__ void launch_dependent_grids() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Eight 16-bit values in one 16-byte access.
struct alignas(16) Vec8 {
  uint4 raw;
};

// Streams a 16-byte line of weights: read once, so keep it out of L1.
__device__ __forceinline__ uint4 load_stream16(const void* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

__device__ __forceinline__ uint4 load16(const void* ptr) { return *reinterpret_cast<const uint4*>(ptr); }

// Asynchronous copies global -> shared (sm_80+), 16 bytes each, bypassing L1; with !valid nothing is
// read and the 16 bytes are zero-filled (a row out of bounds).
__device__ __forceinline__ unsigned smem_u32(const void* ptr) { return static_cast<unsigned>(__cvta_generic_to_shared(ptr)); }
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most PENDING committed groups are still in flight.
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING)); }

// Unpacks 8 halves/bfloats to floats.
template <typename T> __device__ __forceinline__ void unpack8(uint4 v, float (&out)[8]);
template <> __device__ __forceinline__ void unpack8<__half>(uint4 v, float (&out)[8]) {
  const __half2* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __half22float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}
template <> __device__ __forceinline__ void unpack8<__nv_bfloat16>(uint4 v, float (&out)[8]) {
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 f = __bfloat1622float2(h[i]);
    out[2 * i] = f.x;
    out[2 * i + 1] = f.y;
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Block-wide sum for THREADS threads; `scratch` holds THREADS/32 floats. Every thread gets the sum.
template <int THREADS>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
  constexpr int kWarps = THREADS / 32;
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = lane < kWarps ? scratch[lane] : 0.f;
  total = warp_sum(total);
  __syncthreads();
  return total;
}

__device__ __forceinline__ float silu(float v) { return v / (1.f + __expf(-v)); }

}  // namespace ac
