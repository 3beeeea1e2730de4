// The greedy token of each row of a batched decode step's logits, on the device: argmax over the
// vocabulary (the lowest id among equal maxima, as the host sampler's argmax), so a server whose
// sequences decode greedily copies 4 bytes a row back instead of the row (16 rows of Qwen3's 151936
// f32 logits are 9.7 MB a step). One block per row; -1 where a row holds no number (all NaN).
// A runtime kernel: compiled with the regions' kernels and shipped in the artifact of a module with
// decode_batch (emit::kRowArgmaxKernel), launched by the engine (Engine::decode_rows).
#pragma once

#include "common.cuh"

namespace ac {

struct RowArgmaxArgs {
  const float* logits;  // [rows, vocab]
  int* argmax;          // [rows]
  int vocab;
  int rows;
};

constexpr int kRowArgmaxThreads = 1024;

// The better of two (value, index) pairs: the larger value, the lower index among equal ones; NaN
// never wins (it compares false).
__device__ __forceinline__ void row_argmax_take(float& best, int& index, float value, int at) {
  if (value > best || (value == best && at < index)) {
    best = value;
    index = at;
  }
}

}  // namespace ac

extern "C" __global__ void __launch_bounds__(ac::kRowArgmaxThreads) ac_row_argmax(const ac::RowArgmaxArgs a) {
  if (static_cast<int>(blockIdx.x) >= a.rows) return;
  const float* row = a.logits + static_cast<size_t>(blockIdx.x) * a.vocab;
  float best = -__int_as_float(0x7f800000);  // -inf
  int index = 0x7fffffff;
  if (a.vocab % 4 == 0) {  // every row starts 16-byte aligned
    const float4* row4 = reinterpret_cast<const float4*>(row);
    for (int i = threadIdx.x; i < a.vocab / 4; i += blockDim.x) {
      const float4 v = row4[i];
      ac::row_argmax_take(best, index, v.x, 4 * i);
      ac::row_argmax_take(best, index, v.y, 4 * i + 1);
      ac::row_argmax_take(best, index, v.z, 4 * i + 2);
      ac::row_argmax_take(best, index, v.w, 4 * i + 3);
    }
  } else {
    for (int i = threadIdx.x; i < a.vocab; i += blockDim.x) ac::row_argmax_take(best, index, row[i], i);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(0xffffffffu, best, offset);
    const int other_index = __shfl_down_sync(0xffffffffu, index, offset);
    ac::row_argmax_take(best, index, other, other_index);
  }
  __shared__ float warp_best[ac::kRowArgmaxThreads / 32];
  __shared__ int warp_index[ac::kRowArgmaxThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_best[warp] = best;
    warp_index[warp] = index;
  }
  __syncthreads();
  if (warp != 0) return;
  const int warps = blockDim.x / 32;
  best = lane < warps ? warp_best[lane] : -__int_as_float(0x7f800000);
  index = lane < warps ? warp_index[lane] : 0x7fffffff;
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(0xffffffffu, best, offset);
    const int other_index = __shfl_down_sync(0xffffffffu, index, offset);
    ac::row_argmax_take(best, index, other, other_index);
  }
  if (lane == 0) a.argmax[blockIdx.x] = index < a.vocab ? index : -1;
}
