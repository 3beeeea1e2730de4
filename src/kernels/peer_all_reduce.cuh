// One-shot all-reduce (sum) over the ranks' GPUs of one process, reading peers' memory directly over
// NVLink: tensor parallelism's decode all-reduces are a few kilobytes each (one token's hidden row,
// two per layer), where NCCL's latency (~12-15 us in a CUDA graph on H200s) costs more than the
// bytes. A runtime kernel (gpu/peer_all_reduce.h sets it up), one block per call.
//
// Each rank owns a buffer of two slots (of `slot_bytes`) and a flag word per peer, all reachable by
// every rank (peer access). Call number e (a counter in the rank's memory, so a captured graph replays
// correctly) copies the rank's input into its slot e % 2, then posts e into its flag word on every
// rank (release, system scope) and waits until every rank has posted e into its own flags (acquire);
// then every rank sums the slots of ranks 0..n-1 in that order, in f32, and rounds once: every rank
// gets the same bits. Two slots suffice: a rank writes slot e % 2 again only in call e + 2, after it
// saw every peer post e + 1, which each did after finishing call e, its last read of that slot.
#pragma once

#include "common.cuh"

namespace ac {

constexpr int kPeerAllReduceMaxRanks = 8;
constexpr int kPeerAllReduceThreads = 512;

struct PeerAllReduceArgs {
  const void* in;                                    // this rank's count elements
  void* out;                                         // the sum (may be in)
  unsigned char* slots[kPeerAllReduceMaxRanks];      // every rank's two slots, [2][slot_bytes]
  unsigned int* flags[kPeerAllReduceMaxRanks];       // every rank's flag words, [kPeerAllReduceMaxRanks]
  unsigned int* calls;                               // this rank's call counter
  unsigned long long slot_bytes;
  unsigned long long count;
  int ranks;
  int rank;
  int dtype;                                         // 0 f32, 1 f16, 2 bf16
};

__device__ __forceinline__ void peer_flag_release(unsigned int* flag, unsigned int value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ unsigned int peer_flag_acquire(const unsigned int* flag) {
  unsigned int value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// Call number `call` of this rank (its counter plus one): slot call % 2, flag value call.
template <typename T>
__device__ __forceinline__ void peer_all_reduce_sum(const PeerAllReduceArgs& a, unsigned int call) {
  const unsigned int slot = call & 1u;
  const T* in = static_cast<const T*>(a.in);
  T* mine = reinterpret_cast<T*>(a.slots[a.rank] + slot * a.slot_bytes);
  for (unsigned long long i = threadIdx.x; i < a.count; i += blockDim.x) mine[i] = in[i];
  __syncthreads();
  if (threadIdx.x < a.ranks) peer_flag_release(a.flags[threadIdx.x] + a.rank, call);
  if (threadIdx.x < a.ranks)
    while (peer_flag_acquire(a.flags[a.rank] + threadIdx.x) < call) {
    }
  __syncthreads();
  T* out = static_cast<T*>(a.out);
  for (unsigned long long i = threadIdx.x; i < a.count; i += blockDim.x) {
    float sum = 0.f;
    for (int r = 0; r < a.ranks; ++r) sum += to_float(__ldcv(reinterpret_cast<const T*>(a.slots[r] + slot * a.slot_bytes) + i));
    out[i] = from_float<T>(sum);
  }
}

}  // namespace ac

extern "C" __global__ void __launch_bounds__(ac::kPeerAllReduceThreads) ac_peer_all_reduce(const ac::PeerAllReduceArgs a) {
  const unsigned int call = *a.calls + 1;  // read by every thread before thread 0 advances it below
  if (a.dtype == 0) ac::peer_all_reduce_sum<float>(a, call);
  else if (a.dtype == 1) ac::peer_all_reduce_sum<__half>(a, call);
  else ac::peer_all_reduce_sum<__nv_bfloat16>(a, call);
  __syncthreads();
  if (threadIdx.x == 0) *a.calls = call;
}
