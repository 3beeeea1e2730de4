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

// The elements of one 16-byte vector, summed over the ranks in rank order in f32 and rounded once.
template <typename T>
__device__ __forceinline__ uint4 peer_sum_vector(const PeerAllReduceArgs& a, unsigned int slot, unsigned long long v) {
  constexpr int kPer = 16 / sizeof(T);
  uint4 parts[kPeerAllReduceMaxRanks];
#pragma unroll
  for (int r = 0; r < kPeerAllReduceMaxRanks; ++r)  // every rank's load in flight before any sum
    if (r < a.ranks) parts[r] = __ldcv(reinterpret_cast<const uint4*>(a.slots[r] + slot * a.slot_bytes) + v);
  float sum[kPer];
#pragma unroll
  for (int e = 0; e < kPer; ++e) sum[e] = 0.f;
#pragma unroll
  for (int r = 0; r < kPeerAllReduceMaxRanks; ++r) {
    if (r >= a.ranks) break;
    const T* values = reinterpret_cast<const T*>(&parts[r]);
#pragma unroll
    for (int e = 0; e < kPer; ++e) sum[e] += to_float(values[e]);
  }
  uint4 packed;
  T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
  for (int e = 0; e < kPer; ++e) out[e] = from_float<T>(sum[e]);
  return packed;
}

// Call number `call` of this rank (its counter plus one): slot call % 2, flag value call. Copies and
// peer reads go 16 bytes at a time where the rows allow (a remote load is a round trip over NVLink:
// one per element, issued one after another, made a 4096-element row take 17 us); a tail or
// misaligned rows go element by element.
template <typename T>
__device__ __forceinline__ void peer_all_reduce_sum(const PeerAllReduceArgs& a, unsigned int call) {
  constexpr int kPer = 16 / sizeof(T);
  const unsigned int slot = call & 1u;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  T* mine = reinterpret_cast<T*>(a.slots[a.rank] + slot * a.slot_bytes);
  const bool aligned = ((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out) | a.slot_bytes) & 15) == 0;
  const unsigned long long vectors = aligned ? a.count / kPer : 0;
  for (unsigned long long v = threadIdx.x; v < vectors; v += blockDim.x)
    reinterpret_cast<uint4*>(mine)[v] = reinterpret_cast<const uint4*>(in)[v];
  for (unsigned long long i = vectors * kPer + threadIdx.x; i < a.count; i += blockDim.x) mine[i] = in[i];
  __syncthreads();
  if (threadIdx.x < a.ranks) peer_flag_release(a.flags[threadIdx.x] + a.rank, call);
  if (threadIdx.x < a.ranks)
    while (peer_flag_acquire(a.flags[a.rank] + threadIdx.x) < call) {
    }
  __syncthreads();
  for (unsigned long long v = threadIdx.x; v < vectors; v += blockDim.x)
    reinterpret_cast<uint4*>(out)[v] = peer_sum_vector<T>(a, slot, v);
  for (unsigned long long i = vectors * kPer + threadIdx.x; i < a.count; i += blockDim.x) {
    float sum = 0.f;
    for (int r = 0; r < a.ranks; ++r) sum += to_float(__ldcv(reinterpret_cast<const T*>(a.slots[r] + slot * a.slot_bytes) + i));
    out[i] = from_float<T>(sum);
  }
}

}  // namespace ac

// Under programmatic dependent launch (PeerAllReduce::set_programmatic) the kernel lets the next one
// launch at once, so its weight loads overlap the exchange, and waits for its producer before it reads
// anything: past the wait every earlier kernel of the stream has finished, the previous call included.
extern "C" __global__ void __launch_bounds__(ac::kPeerAllReduceThreads) ac_peer_all_reduce(const ac::PeerAllReduceArgs a) {
  ac::launch_dependent_grids();
  ac::wait_for_producer_grid();
  const unsigned int call = *a.calls + 1;  // read by every thread before thread 0 advances it below
  if (a.dtype == 0) ac::peer_all_reduce_sum<float>(a, call);
  else if (a.dtype == 1) ac::peer_all_reduce_sum<__half>(a, call);
  else ac::peer_all_reduce_sum<__nv_bfloat16>(a, call);
  __syncthreads();
  if (threadIdx.x == 0) *a.calls = call;
}
