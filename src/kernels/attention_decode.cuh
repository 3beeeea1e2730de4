// Decode attention family: one query token over the KV cache, split-KV flash decoding.
//
// Bytes: the K and V rows of the valid keys (2 * len * KV * D * 2) dominate, so each block streams
// one chunk of keys of one kv head with 16-byte loads: D/8 lanes share a key row (rounded up to a
// power of two that tiles the warp: at D = 96, 12 of 16 lanes load and the other 4 add zeros),
// THREADS/lanes keys are in flight per step and UNROLL steps are issued before any is used (with
// PREFETCH, the next batch is issued before the current one is computed). The GROUP = NH/KV
// query heads of a kv head (GQA) are all computed from the same loaded rows. Softmax is online
// and in fp32, in the exp2 domain (q is pre-scaled by scale * log2 e).
//
// The valid keys are 0..pos with pos read on the device, so a captured graph replays correctly; with a
// sliding window (window > 0) only pos-window+1..pos, and the splits cover only those, so the kernel
// never reads a key outside the window.
// Split launch: grid (SPLITS, KV); keys per split are CHUNK or more (when len > CHUNK * SPLITS,
// rounded up to 16), blocks past the valid length exit at once, and each active block writes its
// partial max, sum and unnormalized accumulator per query head to the workspace; the combine launch,
// grid (NH, D/32), rescales the active splits and writes [NH, D]. With SPLITS == 1 one launch of
// KV blocks does everything and writes the output directly (short contexts).
// Cluster launch (CLUSTER, sm_90+): the SPLITS blocks of a kv head form one thread-block cluster and
// combine their partials through distributed shared memory, so one launch does what the split launch
// and its combine do, with no workspace: every block stores its partial into block 0's shared memory
// and leaves, block 0 waits at the cluster barrier and writes the output. Keys per split follow
// len/SPLITS (at least CHUNK); blocks past the valid keys still store an empty partial.
//
// Programmatic dependent launch: the kernel places its own wait. Before it, a block reads only what
// earlier kernels wrote: the position (the previous step's sampler) and the cache rows before it
// (earlier steps), so its first batch of K/V loads overlaps the kernel before it. The query and the
// newest key and value row, which that kernel produces, are read after the wait.
// Prologue (PROLOGUE): the region opens with its token's QK-norm, RoPE and KV append. Every block
// normalizes and rotates its query heads itself, from the raw projection (the rotary cos/sin, which
// need only the position, are worked out before the wait); the block whose keys include the new
// position does the same for the new key, writes the key and value row to the cache and folds it in
// from registers. The arithmetic is rope_kv.cuh's, and the rotated rows are rounded
// to T as the cache stores them, so the result equals the two-kernel path. The QK-norm weights are T
// or f32 (W); with WHOLE_NORM the norms are over each token's whole projection (OLMo-2: the query's
// NH*D, the key's KV*D), whose sums of squares every block reduces itself after the wait.
#pragma once

#include "common.cuh"
#include "rope_kv.cuh"  // rope_sincos: the reduced-angle sin/cos the RoPE kernel uses

namespace ac {

template <typename T, typename W = T>
struct AttentionDecodeParams {
  const T* q;          // [NH, D]: the query, or with the prologue its raw projection
  const T* k;          // [L, KV, D]
  const T* v;          // [L, KV, D]
  const int* pos;      // i32 scalar in device memory: keys 0..pos are valid
  T* out;              // [NH, D]
  float* partial_acc;  // [NH, SPLITS, D] sum of p * v per split (split launch only)
  float* partial_ml;   // [NH, SPLITS, 2] max score (exp2 domain) and sum of p per split
  float scale_log2;    // attention scale * log2(e)
  int L;               // cache rows
  // The prologue's inputs (PROLOGUE only).
  const T* k_new;          // [KV, D] the token's raw key projection
  const T* v_new;          // [KV, D] the token's value row
  const W* q_norm;         // [D] QK-norm weights ([NH*D] with WHOLE_NORM), or null without QK-norm
  const W* k_norm;         // [D] ([KV*D] with WHOLE_NORM)
  const float* inv_freq;   // [D/2] RoPE inverse frequencies, or null without RoPE
  float norm_eps;
  T* k_cache;              // = k, written at row pos
  T* v_cache;              // = v
  float rope_scale = 1.f;  // factor on the RoPE cos and sin
  int window = 0;          // > 0: query at pos sees keys pos-window+1 .. pos only
  // Keys before pos were cached by earlier steps, so they may be loaded before the producer's grid is
  // waited for. Not in decode_batch's per-row form (attention_decode_row): the rows of a prompt chunk
  // share a sequence, and its append (the producer) writes every row's key in the same step.
  bool older_keys_cached = true;
};

constexpr float kAttnNegBig = -3.0e38f;  // start of the running max: finite, so exp2(m - m') is never NaN

// Thread-block clusters (sm_90+), in PTX so NVRTC needs no cooperative_groups header.
__device__ __forceinline__ unsigned cluster_block_rank() {
  unsigned rank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
  return rank;
}

// The cluster barrier in its two halves, called by every thread of a block (block-uniformly). A wait
// returns once every thread of the cluster that has not exited has arrived at the current phase; a
// thread may arrive and exit without waiting.
// Arrival that only says "this block has started" (nothing to publish).
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
// Arrival that publishes this thread's earlier shared-memory writes (local or remote).
__device__ __forceinline__ void cluster_arrive_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait_acquire() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// Writes `v` to `local`'s address (a shared-memory variable of this kernel) in block `rank` of the
// cluster: a store that does not wait for an answer, unlike a remote load.
__device__ __forceinline__ void store_cluster_shared(float* local, unsigned rank, float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(local));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
#else
  *local = v;
#endif
}

__device__ __forceinline__ int attention_decode_len(const int* pos, int L) {
  const int len = *pos + 1;
  return len < L ? len : L;
}

// The first valid key: 0, or with a sliding window pos - window + 1 (never past len).
__device__ __forceinline__ int attention_decode_first(int pos, int len, int window) {
  if (window <= 0) return 0;
  const int first = pos + 1 - window;
  return first < 0 ? 0 : first < len ? first : len;
}

// Lanes that share a key row: D/8 rounded up to a power of two (rope_kv.cuh, rope_row_lanes).
template <int D>
__host__ __device__ constexpr int attention_decode_lanes() { return rope_row_lanes(D / 8); }

// Eight weights of a QK-norm as floats, from T or f32 storage (16-byte aligned).
__device__ __forceinline__ void load_norm8(const float* w, float (&out)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(w), b = *reinterpret_cast<const float4*>(w + 4);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
template <typename W>
__device__ __forceinline__ void load_norm8(const W* w, float (&out)[8]) {
  unpack8<W>(load16(w), out);
}

// Keys per split: CHUNK, or len/SPLITS rounded up to 16 once the splits run out.
__device__ __forceinline__ int attention_decode_chunk(int len, int chunk_min, int splits) {
  int c = (len + splits - 1) / splits;
  c = (c + 15) & ~15;
  return c > chunk_min ? c : chunk_min;
}

// The RoPE cos/sin of this lane's 8 dimensions (li * 8 .. li * 8 + 7) at `position`: the same for
// every head row, and computed from what the previous step wrote (the position) and constants, so a
// block works them out once, before its producer wait.
struct RotaryLane {
  float c[8], s[8];
};

template <int D>
__device__ __forceinline__ void rotary_lane(const float* inv_freq, float position, float scale, int li, RotaryLane& r) {
#pragma unroll
  for (int e = 0; e < 8; ++e) {
    rope_sincos(position * inv_freq[(li * 8 + e) % (D / 2)], &r.s[e], &r.c[e]);
    r.s[e] *= scale;
    r.c[e] *= scale;
  }
}

// The prologue of one head row, on this lane's 8 dimensions (the lanes of a row are consecutive in
// the warp; lanes past D/8 hold zeros): QK-norm with weights `w` (when `norm`; over the row, or with
// WHOLE_NORM by `whole_inv`, 1/rms of the whole projection), rotate-half RoPE with the lane's cos/sin
// (when `rotate`; a dimension's partner half lives D/16 lanes away), then the rounding to T the cache
// applies. Every lane of the warp must call it (it shuffles).
template <typename T, int D, bool WHOLE_NORM = false>
__device__ __forceinline__ void attention_prologue_row(float (&x)[8], const float (&w)[8], bool norm, const RotaryLane& rotary,
                                                       bool rotate, float eps, int li, float whole_inv = 0.f) {
  constexpr int kLanes = attention_decode_lanes<D>();
  constexpr int kHalfLanes = D / 16;  // lanes of the first half
  if (norm) {
    float inv = whole_inv;
    if constexpr (!WHOLE_NORM) {
      float squares = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) squares += x[e] * x[e];
#pragma unroll
      for (int offset = kLanes / 2; offset > 0; offset >>= 1) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
      inv = rsqrtf(squares * (1.f / D) + eps);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] = w[e] * (x[e] * inv);
  }
  if (rotate) {
    const bool first_half = li < kHalfLanes;
    float partner[8];
    if constexpr (kLanes == 2 * kHalfLanes) {
#pragma unroll
      for (int e = 0; e < 8; ++e) partner[e] = __shfl_xor_sync(0xffffffffu, x[e], kHalfLanes);
    } else {  // padded rows: the partner is not a power of two away
      const int lane = static_cast<int>(threadIdx.x % 32);
      const int source = lane - li + (first_half ? li + kHalfLanes : li - kHalfLanes);
#pragma unroll
      for (int e = 0; e < 8; ++e) partner[e] = __shfl_sync(0xffffffffu, x[e], source);
    }
#pragma unroll
    for (int e = 0; e < 8; ++e)
      x[e] = first_half ? x[e] * rotary.c[e] - partner[e] * rotary.s[e] : x[e] * rotary.c[e] + partner[e] * rotary.s[e];
    // Padding lanes (D = 96: lanes 12..15 of 16) rotated a partner's values into their zeros; they must
    // stay zero, or the newest key's score gains q_pad . k_pad (a wrong logit for the current token).
    if constexpr (kLanes != 2 * kHalfLanes) {
      if (li >= D / 8) {
#pragma unroll
        for (int e = 0; e < 8; ++e) x[e] = 0.f;
      }
    }
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) x[e] = to_float(from_float<T>(x[e]));
}

// WHOLE_NORM: 1/rms over the token's whole query projection (q_width elements) and key projection
// (k_width; 0 where the block has no new key), each sum of squares reduced over the block, so every
// thread gets both. Called by every thread of the block.
template <typename T, int THREADS>
__device__ __forceinline__ void attention_whole_norms(const T* q, int q_width, const T* k, int k_width, float eps, float& q_inv,
                                                      float& k_inv) {
  constexpr int kWarps = THREADS / 32;
  __shared__ float2 partial[kWarps];
  float sq = 0.f, sk = 0.f;
  for (int c = threadIdx.x * 8; c < q_width; c += THREADS * 8) {
    float v[8];
    unpack8<T>(load16(q + c), v);
#pragma unroll
    for (int e = 0; e < 8; ++e) sq = fmaf(v[e], v[e], sq);
  }
  for (int c = threadIdx.x * 8; c < k_width; c += THREADS * 8) {
    float v[8];
    unpack8<T>(load16(k + c), v);
#pragma unroll
    for (int e = 0; e < 8; ++e) sk = fmaf(v[e], v[e], sk);
  }
  sq = warp_sum(sq);
  sk = warp_sum(sk);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = make_float2(sq, sk);
  __syncthreads();
  sq = 0.f;
  sk = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    sq += partial[w].x;
    sk += partial[w].y;
  }
  q_inv = rsqrtf(sq / static_cast<float>(q_width) + eps);
  k_inv = k_width > 0 ? rsqrtf(sk / static_cast<float>(k_width) + eps) : 0.f;
}

// Shared memory of the split kernel by the planner's rule (plan/families/attention_decode.cpp,
// cluster_shared_bytes): the warps' partials and, with a cluster, every block's, with their max and sum.
// Past the 48 KB a block has without opting in, the accumulators move to dynamic shared memory.
// decode_batch's per-row form (ir/decode_batch.h): row blockIdx.z is one query of its own sequence, at
// position pos[row] over the cache rows base[row] .. base[row] + pos[row]. The one-token kernels run on
// that row's view: its query and output row, the caches from its first row, its position, and its own
// block of the split's partials (NH * SPLITS * (D + 2) floats a row). Both arrays are the step's
// inputs, written before the step: read before the producer wait, as the position is.
template <int NH, int KV, int D, int SPLITS, typename T, typename W>
__device__ __forceinline__ AttentionDecodeParams<T, W> attention_decode_row(AttentionDecodeParams<T, W> p, const int* base) {
  const int row = blockIdx.z;
  const size_t first = static_cast<size_t>(base[row]);
  p.q += static_cast<size_t>(row) * NH * D;
  p.out += static_cast<size_t>(row) * NH * D;
  p.k += first * KV * D;
  p.v += first * KV * D;
  p.pos += row;
  p.L -= static_cast<int>(first);
  p.older_keys_cached = false;
  const size_t partials = static_cast<size_t>(row) * NH * SPLITS * (D + 2);
  if (p.partial_acc) p.partial_acc += partials;
  if (p.partial_ml) p.partial_ml += partials;
  return p;
}

template <int D, int GROUP, int THREADS, int SPLITS, bool CLUSTER>
__host__ __device__ constexpr bool attention_decode_dynamic_shared() {
  return CLUSTER && (THREADS / 32 + SPLITS) * GROUP * (D + 2) * 4 > 48 * 1024;
}

template <typename T, int D, int KV, int GROUP, int THREADS, int UNROLL, bool PREFETCH, int CHUNK, int SPLITS,
          bool CLUSTER = false, bool PROLOGUE = false, bool WHOLE_NORM = false, typename W = T>
__device__ __forceinline__ void attention_decode_split(const AttentionDecodeParams<T, W>& p) {
  constexpr int kUsedLanes = D / 8;                          // lanes that load a key row's 16-byte pieces
  constexpr int kLanes = attention_decode_lanes<D>();        // lanes per key row
  constexpr int kKeysPerStep = THREADS / kLanes;
  constexpr int kWarps = THREADS / 32;
  static_assert(32 % kLanes == 0 && THREADS % 32 == 0 && D % 16 == 0, "key rows must tile a warp");
  __shared__ float sm_ml[kWarps][GROUP][2];
  // The warps' partial accumulators, and with a cluster block 0's copy of every block's: in static
  // shared memory while they fit its 48 KB, else in dynamic shared memory (the launch opts in and
  // passes attention_decode_dynamic_shared_bytes; the planner sizes it with the same rule). Large
  // heads need it: 4 query heads of 256 dims per kv head (Gemma-3) fit a cluster only at 128 threads.
  constexpr bool kDynamicShared = attention_decode_dynamic_shared<D, GROUP, THREADS, SPLITS, CLUSTER>();
  float (*sm_acc)[GROUP][D];
  float (*cluster_acc)[GROUP][D];
  if constexpr (kDynamicShared) {
    extern __shared__ __align__(16) float attention_decode_shared[];
    sm_acc = reinterpret_cast<float (*)[GROUP][D]>(attention_decode_shared);
    cluster_acc = reinterpret_cast<float (*)[GROUP][D]>(attention_decode_shared + kWarps * GROUP * D);
  } else {
    __shared__ __align__(16) float sm_acc_static[kWarps][GROUP][D];
    __shared__ __align__(16) float cluster_acc_static[CLUSTER ? SPLITS : 1][GROUP][D];
    sm_acc = sm_acc_static;
    cluster_acc = cluster_acc_static;
  }

  const int kv_head = blockIdx.y, split = blockIdx.x;
  const int pos = *p.pos;  // written by the previous step: safe to read before the wait
  const int len = attention_decode_len(p.pos, p.L);
  const int first = attention_decode_first(pos, len, p.window);
  int begin = first, end = len;
  if (SPLITS > 1) {
    const int chunk = attention_decode_chunk(len - first, CHUNK, SPLITS);
    begin = first + split * chunk;
    if (begin >= len && !CLUSTER) return;  // the whole block: this split is past the valid keys
    begin = min(begin, len);               // (a cluster block stays for the barriers, with no keys)
    end = min(len, begin + chunk);
  }
  // Keys [begin, old_end) were cached by earlier steps; the newest (pos) is the producer's, when it
  // is inside the cache.
  const int newest = pos < p.L ? pos : p.L;
  const int old_end = min(end, newest);
  const bool has_new = newest >= begin && newest < end;  // block-uniform

  const int key_slot = threadIdx.x / kLanes, li = threadIdx.x % kLanes;
  const bool lane_loads = kUsedLanes == kLanes || li < kUsedLanes;  // padded lanes hold zeros
  constexpr size_t kRowStride = static_cast<size_t>(KV) * D;  // elements between keys
  const T* k_base = p.k + static_cast<size_t>(kv_head) * D + li * 8;
  const T* v_base = p.v + static_cast<size_t>(kv_head) * D + li * 8;
  const float neg_inf = __int_as_float(0xff800000);
  const uint4 zero16 = make_uint4(0, 0, 0, 0);

  // Keys past the cached ones re-read the last cached row (no branch between the loads) and are masked.
  constexpr int kStep = kKeysPerStep * UNROLL;
  auto load_step = [&](uint4 (&kr)[UNROLL], uint4 (&vr)[UNROLL], int base) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const size_t j = static_cast<size_t>(min(base + u * kKeysPerStep + key_slot, old_end - 1));
      kr[u] = lane_loads ? load_stream16(k_base + j * kRowStride) : zero16;
      vr[u] = lane_loads ? load_stream16(v_base + j * kRowStride) : zero16;
    }
  };
  uint4 kr[UNROLL], vr[UNROLL];
  const bool load_early = p.older_keys_cached && begin < old_end;  // block-uniform
  if (load_early) load_step(kr, vr, begin);  // cached rows: in flight before the wait
  // QK-norm weights: one row for every head, or with WHOLE_NORM each query head's own.
  constexpr int kNormRows = WHOLE_NORM ? GROUP : 1;
  float q_norm_w[kNormRows][8], k_norm_w[8];
  const bool qk_norm = PROLOGUE && p.q_norm != nullptr;
  if (qk_norm && lane_loads) {
#pragma unroll
    for (int g = 0; g < kNormRows; ++g) load_norm8(p.q_norm + (WHOLE_NORM ? (kv_head * GROUP + g) * D : 0) + li * 8, q_norm_w[g]);
    load_norm8(p.k_norm + (WHOLE_NORM ? kv_head * D : 0) + li * 8, k_norm_w);
  }
  RotaryLane rotary;
  const bool rotate = PROLOGUE && p.inv_freq != nullptr;
  if (rotate) rotary_lane<D>(p.inv_freq, static_cast<float>(pos), p.rope_scale, li, rotary);
  // A cluster's partials meet in block 0's shared memory, which the others may write only once it
  // has started: this arrival (waited on just before those writes) says so, off the critical path.
  if (CLUSTER) cluster_arrive_relaxed();

  wait_for_producer_grid();
  launch_dependent_grids();
  if (!load_early && begin < old_end) load_step(kr, vr, begin);

  // The producer's rows (the query, and the newest key and value) are all requested before any is
  // used: one round trip to L2 instead of one per row.
  const size_t newest_row = static_cast<size_t>(newest) * kRowStride;
  uint4 q_raw[GROUP], k_raw = zero16, v_newest = zero16;
#pragma unroll
  for (int g = 0; g < GROUP; ++g) q_raw[g] = lane_loads ? load16(p.q + static_cast<size_t>(kv_head * GROUP + g) * D + li * 8) : zero16;
  if (has_new && lane_loads) {
    k_raw = load16(PROLOGUE ? p.k_new + static_cast<size_t>(kv_head) * D + li * 8 : k_base + newest_row);
    v_newest = load16(PROLOGUE ? p.v_new + static_cast<size_t>(kv_head) * D + li * 8 : v_base + newest_row);
  }
  // WHOLE_NORM: 1/rms of the query's whole projection and, in the block with the new key, of the key's.
  float q_whole_inv = 0.f, k_whole_inv = 0.f;
  if constexpr (PROLOGUE && WHOLE_NORM) {
    if (qk_norm) attention_whole_norms<T, THREADS>(p.q, GROUP * KV * D, p.k_new, has_new ? KV * D : 0, p.norm_eps,
                                                   q_whole_inv, k_whole_inv);
  }
  float qf[GROUP][8];
#pragma unroll
  for (int g = 0; g < GROUP; ++g) {
    unpack8<T>(q_raw[g], qf[g]);
    if (PROLOGUE)
      attention_prologue_row<T, D, WHOLE_NORM>(qf[g], q_norm_w[WHOLE_NORM ? g : 0], qk_norm, rotary, rotate, p.norm_eps, li, q_whole_inv);
#pragma unroll
    for (int e = 0; e < 8; ++e) qf[g][e] *= p.scale_log2;
  }
  // The newest key and value row: computed here with the prologue (and written to the cache by one
  // key slot), otherwise written by the producer and read back.
  float k_newest[8];
  unpack8<T>(k_raw, k_newest);
  if (has_new) {
    const size_t row = newest_row;
    if (PROLOGUE) {
      attention_prologue_row<T, D, WHOLE_NORM>(k_newest, k_norm_w, qk_norm, rotary, rotate, p.norm_eps, li, k_whole_inv);
      if (key_slot == 0 && lane_loads) {
        alignas(16) T k_row[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) k_row[e] = from_float<T>(k_newest[e]);
        *reinterpret_cast<uint4*>(p.k_cache + row + static_cast<size_t>(kv_head) * D + li * 8) = *reinterpret_cast<const uint4*>(k_row);
        *reinterpret_cast<uint4*>(p.v_cache + row + static_cast<size_t>(kv_head) * D + li * 8) = v_newest;
      }
    }
  }

  float m[GROUP], l[GROUP], acc[GROUP][8];
#pragma unroll
  for (int g = 0; g < GROUP; ++g) {
    m[g] = kAttnNegBig;
    l[g] = 0.f;
#pragma unroll
    for (int e = 0; e < 8; ++e) acc[g][e] = 0.f;
  }

  // Online softmax over UNROLL keys per key slot: s[u][g] are the scores (exp2 domain).
  auto fold_scores = [&](float (&s)[UNROLL][GROUP], const uint4 (&vr)[UNROLL]) {
#pragma unroll
    for (int g = 0; g < GROUP; ++g) {
      float step_max = s[0][g];
#pragma unroll
      for (int u = 1; u < UNROLL; ++u) step_max = fmaxf(step_max, s[u][g]);
      const float m_new = fmaxf(m[g], step_max);
      const float correction = exp2f(m[g] - m_new);
      m[g] = m_new;
      l[g] *= correction;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] *= correction;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      float vf[8];
      unpack8<T>(vr[u], vf);
#pragma unroll
      for (int g = 0; g < GROUP; ++g) {
        const float pu = exp2f(s[u][g] - m[g]);
        l[g] += pu;
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[g][e] = fmaf(pu, vf[e], acc[g][e]);
      }
    }
  };
  auto compute_step = [&](const uint4 (&kr)[UNROLL], const uint4 (&vr)[UNROLL], int base) {
    float s[UNROLL][GROUP];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      float kf[8];
      unpack8<T>(kr[u], kf);
#pragma unroll
      for (int g = 0; g < GROUP; ++g) {
        float dot = 0.f;
#pragma unroll
        for (int e = 0; e < 8; ++e) dot = fmaf(qf[g][e], kf[e], dot);
        s[u][g] = dot;
      }
    }
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset >>= 1)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int g = 0; g < GROUP; ++g) s[u][g] += __shfl_xor_sync(0xffffffffu, s[u][g], offset);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
      if (base + u * kKeysPerStep + key_slot >= old_end)
#pragma unroll
        for (int g = 0; g < GROUP; ++g) s[u][g] = neg_inf;
    fold_scores(s, vr);
  };

  // The step count is block-uniform so the lanes of a key row always shuffle together. With
  // PREFETCH the next step's lines are in flight while this step is computed (software pipeline);
  // without it, the next step is issued right after this one is computed.
  for (int base = begin; base < old_end; base += kStep) {
    const bool more = base + kStep < old_end;
    if (PREFETCH) {
      uint4 kn[UNROLL], vn[UNROLL];
      if (more) load_step(kn, vn, base + kStep);
      compute_step(kr, vr, base);
      if (more) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          kr[u] = kn[u];
          vr[u] = vn[u];
        }
      }
    } else {
      compute_step(kr, vr, base);
      if (more) load_step(kr, vr, base + kStep);
    }
  }
  if (has_new) {  // the newest key, in key slot 0 (the other slots add nothing)
    float s[UNROLL][GROUP];
    uint4 vn[UNROLL];
#pragma unroll
    for (int g = 0; g < GROUP; ++g) {
      float dot = 0.f;
#pragma unroll
      for (int e = 0; e < 8; ++e) dot = fmaf(qf[g][e], k_newest[e], dot);
      s[0][g] = dot;
    }
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset >>= 1)
#pragma unroll
      for (int g = 0; g < GROUP; ++g) s[0][g] += __shfl_xor_sync(0xffffffffu, s[0][g], offset);
#pragma unroll
    for (int g = 0; g < GROUP; ++g) {
      if (key_slot != 0) s[0][g] = neg_inf;
#pragma unroll
      for (int u = 1; u < UNROLL; ++u) s[u][g] = neg_inf;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) vn[u] = v_newest;
    fold_scores(s, vn);
  }

  // Merge the key rows of a warp (lanes li, li + kLanes, ... hold the same dims), then the warps.
#pragma unroll
  for (int offset = kLanes; offset < 32; offset <<= 1)
#pragma unroll
    for (int g = 0; g < GROUP; ++g) {
      const float m_other = __shfl_xor_sync(0xffffffffu, m[g], offset);
      const float l_other = __shfl_xor_sync(0xffffffffu, l[g], offset);
      const float m_new = fmaxf(m[g], m_other);
      const float a = exp2f(m[g] - m_new), b = exp2f(m_other - m_new);
      l[g] = l[g] * a + l_other * b;
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * a + __shfl_xor_sync(0xffffffffu, acc[g][e], offset) * b;
      m[g] = m_new;
    }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane < kUsedLanes) {
#pragma unroll
    for (int g = 0; g < GROUP; ++g) {
      float4* dst = reinterpret_cast<float4*>(&sm_acc[warp][g][li * 8]);
      dst[0] = make_float4(acc[g][0], acc[g][1], acc[g][2], acc[g][3]);
      dst[1] = make_float4(acc[g][4], acc[g][5], acc[g][6], acc[g][7]);
      if (lane == 0) {
        sm_ml[warp][g][0] = m[g];
        sm_ml[warp][g][1] = l[g];
      }
    }
  }
  __syncthreads();
  // With a cluster, block 0 gathers every block's partial: [SPLITS][GROUP] (max, sum), [SPLITS][GROUP][D].
  __shared__ float cluster_ml[CLUSTER ? SPLITS : 1][GROUP][2];
  const unsigned rank = CLUSTER ? cluster_block_rank() : 0u;
  if (CLUSTER) cluster_wait_acquire();  // every block of the cluster has started (the early arrival)
  for (int idx = threadIdx.x; idx < GROUP * D; idx += THREADS) {
    const int g = idx / D, d = idx % D;
    float m_all = kAttnNegBig;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m_all = fmaxf(m_all, sm_ml[w][g][0]);
    float l_all = 0.f, a_all = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = exp2f(sm_ml[w][g][0] - m_all);
      l_all += sm_ml[w][g][1] * f;
      a_all += sm_acc[w][g][d] * f;
    }
    const int head = kv_head * GROUP + g;
    if (CLUSTER) {
      store_cluster_shared(&cluster_acc[rank][g][d], 0, a_all);
      if (d == 0) {
        store_cluster_shared(&cluster_ml[rank][g][0], 0, m_all);
        store_cluster_shared(&cluster_ml[rank][g][1], 0, l_all);
      }
    } else if (SPLITS == 1) {
      p.out[static_cast<size_t>(head) * D + d] = from_float<T>(a_all / l_all);
    } else {
      const size_t at = static_cast<size_t>(head) * SPLITS + split;
      p.partial_acc[at * D + d] = a_all;
      if (d == 0) {
        p.partial_ml[at * 2] = m_all;
        p.partial_ml[at * 2 + 1] = l_all;
      }
    }
  }
  if (CLUSTER) {
    // The others publish their stores to block 0 and leave (nothing reads their shared memory);
    // block 0 waits for all of them and rescales the SPLITS partials from its own shared memory.
    cluster_arrive_release();
    if (rank != 0) return;
    cluster_wait_acquire();
    for (int idx = threadIdx.x; idx < GROUP * D; idx += THREADS) {
      const int g = idx / D, d = idx % D;
      float m_all = kAttnNegBig;
#pragma unroll
      for (int r = 0; r < SPLITS; ++r) m_all = fmaxf(m_all, cluster_ml[r][g][0]);
      float l_all = 0.f, a_all = 0.f;
#pragma unroll
      for (int r = 0; r < SPLITS; ++r) {
        const float f = exp2f(cluster_ml[r][g][0] - m_all);
        l_all += cluster_ml[r][g][1] * f;
        a_all += cluster_acc[r][g][d] * f;
      }
      p.out[static_cast<size_t>(kv_head * GROUP + g) * D + d] = from_float<T>(a_all / l_all);
    }
  }
}

// Combine: grid (NH, D/32), 128 threads. Each block rescales the active splits of one head for 32
// dims: 8 lanes of float4 per split row, 16 split rows in flight.
template <typename T, int D, int CHUNK, int SPLITS, typename W = T>
__device__ __forceinline__ void attention_decode_combine(const AttentionDecodeParams<T, W>& p) {
  constexpr int kThreads = 128, kCols = 32, kRowsInFlight = kThreads / (kCols / 4);
  __shared__ float weight[SPLITS];
  __shared__ float scratch[kThreads / 32];
  __shared__ float part[kRowsInFlight][kCols + 1];
  const int head = blockIdx.x, d0 = blockIdx.y * kCols, tid = threadIdx.x;
  wait_for_producer_grid();  // the partials of the split launch
  launch_dependent_grids();
  const int len = attention_decode_len(p.pos, p.L);
  const int keys = len - attention_decode_first(*p.pos, len, p.window);
  const int chunk = attention_decode_chunk(keys, CHUNK, SPLITS);
  const int splits = (keys + chunk - 1) / chunk;
  const float* ml = p.partial_ml + static_cast<size_t>(head) * SPLITS * 2;  // [SPLITS, 2]

  float m_all = kAttnNegBig;
  for (int s = tid; s < splits; s += kThreads) m_all = fmaxf(m_all, ml[s * 2]);
  m_all = warp_max(m_all);
  if (tid % 32 == 0) scratch[tid / 32] = m_all;
  __syncthreads();
  m_all = scratch[0];
#pragma unroll
  for (int w = 1; w < kThreads / 32; ++w) m_all = fmaxf(m_all, scratch[w]);
  __syncthreads();
  float l_all = 0.f;
  for (int s = tid; s < splits; s += kThreads) {
    const float f = exp2f(ml[s * 2] - m_all);
    weight[s] = f;
    l_all += ml[s * 2 + 1] * f;
  }
  l_all = block_sum<kThreads>(l_all, scratch);  // its barriers also publish weight[]

  const int col4 = tid % (kCols / 4), row = tid / (kCols / 4);
  const float* acc = p.partial_acc + static_cast<size_t>(head) * SPLITS * D + d0 + col4 * 4;  // [SPLITS, D]
  float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
  for (int s = row; s < splits; s += kRowsInFlight) {
    const float4 a = *reinterpret_cast<const float4*>(acc + static_cast<size_t>(s) * D);
    const float f = weight[s];
    sum.x = fmaf(a.x, f, sum.x);
    sum.y = fmaf(a.y, f, sum.y);
    sum.z = fmaf(a.z, f, sum.z);
    sum.w = fmaf(a.w, f, sum.w);
  }
  part[row][col4 * 4 + 0] = sum.x;
  part[row][col4 * 4 + 1] = sum.y;
  part[row][col4 * 4 + 2] = sum.z;
  part[row][col4 * 4 + 3] = sum.w;
  __syncthreads();
  if (tid < kCols) {
    float total = 0.f;
#pragma unroll
    for (int r = 0; r < kRowsInFlight; ++r) total += part[r][tid];
    p.out[static_cast<size_t>(head) * D + d0 + tid] = from_float<T>(total / l_all);
  }
}

}  // namespace ac
