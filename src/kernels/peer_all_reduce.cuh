// One-shot all-reduce (sum) over the ranks' GPUs of one process, writing into peers' memory directly over
// NVLink: tensor parallelism's decode all-reduces are a few kilobytes each (one token's hidden row,
// two per layer), where NCCL's latency (~11-15 us in a CUDA graph on H200s) costs more than the
// bytes. A runtime kernel (gpu/peer_all_reduce.h sets it up), one block per call.
//
// Push, with the data as its own flag. Each rank owns three slots, each with one part per rank
// (`slot_bytes` each), reachable by every rank (peer access). An empty element holds the bits 0x8000
// in every 16-bit half (-0 in f16 and bf16; a negative subnormal in f32), and every slot starts empty.
// Call number e (a counter in the rank's memory, so a captured graph replays correctly):
//   1. stores the rank's row into its part of slot e % 3 on every peer (posted writes, no fence:
//      a row's element that holds the empty bits is stored as the zero of the same sign bit's
//      neighbour, see peer_fill_value);
//   2. empties the parts of slot (e - 1) % 3 that call e - 1 filled (while its own row is on its way:
//      the emptying's stores no longer wait behind the sum);
//   3. reads each peer's part of its own slot e % 3, local memory, until no element is empty, and sums
//      the ranks in rank order in f32, rounding once: every rank gets the same bits.
// No flag, no fence, no remote read: the wait is one NVLink write's latency. Three slots suffice: a
// peer fills slot e % 3 again in call e + 3, which it reaches only after this rank's row of call e + 2
// arrived, written after this rank's call e + 1 had emptied slot e % 3 (kernels of a stream finish in
// order) and after its call e had read it. Emptying slot (e - 1) % 3 before reading slot e % 3 is safe
// for the same reason: the peers' next writes into it come in call e + 2.
#pragma once

#include "common.cuh"

namespace ac {

constexpr int kPeerAllReduceMaxRanks = 8;
constexpr int kPeerAllReduceThreads = 512;
constexpr int kPeerAllReduceSlots = 3;
constexpr unsigned int kPeerEmptyWord = 0x80008000u;  // two empty 16-bit halves

struct PeerAllReduceArgs {
  const void* in;                                    // this rank's count elements
  void* out;                                         // the sum (may be in)
  unsigned char* slots[kPeerAllReduceMaxRanks];      // every rank's three slots, [3][ranks][slot_bytes]
  unsigned long long* calls;                         // this rank's call counter (64 bits: never wraps)
  unsigned long long* filled;                        // bytes per part that this rank's last call received
  unsigned long long slot_bytes;
  unsigned long long count;
  int ranks;
  int rank;
  int dtype;                                         // 0 f32, 1 f16, 2 bf16
};

// An element's bits as the row holds them, made different from the empty bits: in f16 and bf16 the
// empty bits are -0, stored as +0; in f32 they are a negative subnormal (-4.6e-41), stored as -0. The
// sum changes by at most that subnormal, and only the sign of a zero can differ from NCCL's.
__device__ __forceinline__ unsigned int peer_fill_value(unsigned int word, int element_bytes) {
  if (element_bytes == 4) return word == kPeerEmptyWord ? 0x80000000u : word;
  if ((word & 0xffffu) == 0x8000u) word &= 0xffff0000u;
  if ((word >> 16) == 0x8000u) word &= 0x0000ffffu;
  return word;
}

__device__ __forceinline__ bool peer_word_empty(unsigned int word, int element_bytes) {
  if (element_bytes == 4) return word == kPeerEmptyWord;
  return (word & 0xffffu) == 0x8000u || (word >> 16) == 0x8000u;
}

__device__ __forceinline__ void peer_store(void* address, uint4 v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(address), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

__device__ __forceinline__ uint4 peer_load(const void* address) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(address) : "memory");
  return v;
}

__device__ __forceinline__ uint4 peer_fill_vector(uint4 v, int element_bytes) {
  return make_uint4(peer_fill_value(v.x, element_bytes), peer_fill_value(v.y, element_bytes), peer_fill_value(v.z, element_bytes),
                    peer_fill_value(v.w, element_bytes));
}

__device__ __forceinline__ bool peer_vector_empty(uint4 v, int element_bytes) {
  return peer_word_empty(v.x, element_bytes) || peer_word_empty(v.y, element_bytes) || peer_word_empty(v.z, element_bytes) ||
         peer_word_empty(v.w, element_bytes);
}

// a.slots[rank], picked without indexing the kernel's parameters at run time (which copies them to the stack).
__device__ __forceinline__ unsigned char* peer_slots_of(const PeerAllReduceArgs& a, int rank) {
  unsigned char* slots = a.slots[0];
#pragma unroll
  for (int r = 1; r < kPeerAllReduceMaxRanks; ++r)
    if (r == rank) slots = a.slots[r];
  return slots;
}

// Adds the elements of one 16-byte vector of T to sum.
template <typename T>
__device__ __forceinline__ void peer_add(float* sum, uint4 v) {
  constexpr int kPer = 16 / sizeof(T);
  const T* values = reinterpret_cast<const T*>(&v);
#pragma unroll
  for (int e = 0; e < kPer; ++e) sum[e] += to_float(values[e]);
}

// Call number `call` of this rank (its counter plus one). The row moves in 16-byte vectors: in the
// slots a last partial vector is padded with zeros (summed, never written to `out`); `in` and `out` are
// read and written element by element where a vector would pass count or they are not 16-byte aligned.
template <typename T>
__device__ __forceinline__ void peer_all_reduce_sum(const PeerAllReduceArgs& a, unsigned long long call) {
  constexpr int kPer = 16 / sizeof(T);
  constexpr int kBytes = sizeof(T);
  const unsigned long long slot_stride = a.slot_bytes * static_cast<unsigned long long>(a.ranks);
  const unsigned long long slot = (call % kPeerAllReduceSlots) * slot_stride;
  const unsigned long long vectors = (a.count + kPer - 1) / kPer;
  const bool aligned = ((reinterpret_cast<unsigned long long>(a.in) | reinterpret_cast<unsigned long long>(a.out)) & 15) == 0;
  const T* in = static_cast<const T*>(a.in);
  T* out = static_cast<T*>(a.out);
  // The row's vector v, its elements past count (and, unaligned, every element) read one by one.
  auto row_vector = [&](unsigned long long v) {
    const unsigned long long first = v * kPer;
    if (aligned && first + kPer <= a.count) return peer_fill_vector(reinterpret_cast<const uint4*>(in)[v], kBytes);
    uint4 packed = make_uint4(0, 0, 0, 0);
    T* elements = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int e = 0; e < kPer; ++e)
      if (first + e < a.count) elements[e] = in[first + e];
    return peer_fill_vector(packed, kBytes);
  };
  // 1. The row into every peer's slot.
  const unsigned long long my_part = slot + static_cast<unsigned long long>(a.rank) * a.slot_bytes;
  for (unsigned long long v = threadIdx.x; v < vectors; v += blockDim.x) {
    const uint4 mine = row_vector(v);
#pragma unroll
    for (int r = 0; r < kPeerAllReduceMaxRanks; ++r)  // (unrolled: a.slots stays in parameter space)
      if (r < a.ranks && r != a.rank) peer_store(a.slots[r] + my_part + v * 16, mine);
  }
  // 2. Empty what the previous call received: the peers' parts of slot (call - 1) % 3.
  const unsigned long long previous = ((call + kPeerAllReduceSlots - 1) % kPeerAllReduceSlots) * slot_stride;
  const unsigned long long filled_vectors = (*a.filled + 15) / 16;
  const uint4 empty = make_uint4(kPeerEmptyWord, kPeerEmptyWord, kPeerEmptyWord, kPeerEmptyWord);
  unsigned char* own = peer_slots_of(a, a.rank);
  for (int r = 0; r < a.ranks; ++r) {
    if (r == a.rank) continue;
    uint4* part = reinterpret_cast<uint4*>(own + previous + static_cast<unsigned long long>(r) * a.slot_bytes);
    for (unsigned long long v = threadIdx.x; v < filled_vectors; v += blockDim.x) part[v] = empty;
  }
  // 3. Every peer's row from this rank's slot as it arrives, summed in rank order.
  const unsigned char* local = peer_slots_of(a, a.rank) + slot;
  for (unsigned long long v = threadIdx.x; v < vectors; v += blockDim.x) {
    float sum[kPer];
#pragma unroll
    for (int e = 0; e < kPer; ++e) sum[e] = 0.f;
    for (int r = 0; r < a.ranks; ++r) {
      uint4 part;
      if (r == a.rank) {
        part = row_vector(v);
      } else {
        const unsigned char* address = local + static_cast<unsigned long long>(r) * a.slot_bytes + v * 16;
        do part = peer_load(address);
        while (peer_vector_empty(part, kBytes));
      }
      peer_add<T>(sum, part);
    }
    const unsigned long long first = v * kPer;
    if (aligned && first + kPer <= a.count) {
      uint4 packed;
      T* values = reinterpret_cast<T*>(&packed);
#pragma unroll
      for (int e = 0; e < kPer; ++e) values[e] = from_float<T>(sum[e]);
      reinterpret_cast<uint4*>(out)[v] = packed;
    } else {
#pragma unroll
      for (int e = 0; e < kPer; ++e)
        if (first + e < a.count) out[first + e] = from_float<T>(sum[e]);
    }
  }
}

}  // namespace ac

// Under programmatic dependent launch (PeerAllReduce::set_programmatic) the kernel lets the next one
// launch at once, so its weight loads overlap the exchange, and waits for its producer before it reads
// anything: past the wait every earlier kernel of the stream has finished, the previous call included.
extern "C" __global__ void __launch_bounds__(ac::kPeerAllReduceThreads) ac_peer_all_reduce(const ac::PeerAllReduceArgs a) {
  ac::launch_dependent_grids();
  ac::wait_for_producer_grid();
  const unsigned long long call = *a.calls + 1;  // read by every thread before thread 0 advances it below
  if (a.dtype == 0) ac::peer_all_reduce_sum<float>(a, call);
  else if (a.dtype == 1) ac::peer_all_reduce_sum<__half>(a, call);
  else ac::peer_all_reduce_sum<__nv_bfloat16>(a, call);
  __syncthreads();
  if (threadIdx.x == 0) {
    *a.calls = call;
    *a.filled = (a.count * (a.dtype == 0 ? 4 : 2) + 15) / 16 * 16;
  }
}
