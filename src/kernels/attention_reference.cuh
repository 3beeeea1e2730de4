// Reference attention family: the conservative kernel every attention region can fall back to,
// prefill (T queries, chunked: pos may be > 0) and decode (one query) alike.
//
//   o[t, h] = softmax(scale * q[t, h] · K[first .. pos+t, h/G]ᵀ) · V[first .. pos+t, h/G]
//
// for queries at absolute positions pos .. pos+T-1 over a [L, KV, D] cache that already holds rows
// [0, pos+T) (causal with a position offset, GQA with G = NH/KV query heads per kv head), where
// first is 0, or max(0, pos+t-window+1) with a sliding window, exactly as the reference interpreter
// computes it (ir/interpreter_ops.cpp, `attention`).
//
// One block per (query row, head): grid (T, NH). The block stages its scaled query row in shared
// memory, then streams the visible keys in tiles of TILE rows of K and V:
//   1. the tile, read into registers while the previous tile was computed, is converted to fp32
//      into shared memory (rows padded to D+1 floats against bank conflicts);
//   2. scores: THREADS/TILE lanes share each key's dot product (one pass scores the tile) and
//      reduce it with shuffles; a block-wide max follows;
//   3. fp32 online softmax: the running max and sum are rescaled, each key's probability computed
//      once into shared memory;
//   4. the threads that own output dimensions (d = tid, tid+THREADS, ...) rescale their
//      accumulators and add p · V.
// ROWS (decode_batch, ir/decode_batch.h): query row t is one query of its own sequence, at position
// pos[t], whose keys are cache rows base[t] .. base[t] + pos[t]; ROWS = false compiles exactly the
// one-sequence kernel.
// K/V are read in 16-byte pieces when D allows it and both caches are 16-byte aligned (the next
// tile's pieces in flight while the current one is computed), otherwise element by element. Every
// loop is bounded by D and the tile's valid keys, so any head dimension works, and f32, f16 and
// bf16 share one code. Obviously correct before fast: the fast families (attention_prefill,
// attention_decode) rank first wherever they match. Measured on H200 (Qwen3-1.7B shapes, bf16):
// decode over 4096 keys ~285 us (split-KV family ~12 us), a 2048-token prefill ~9.7 ms (mma ~67 us).
#pragma once

#include "common.cuh"

namespace ac {

template <typename T>
struct AttentionReferenceParams {
  const T* q;      // [T, NH, D]
  const T* k;      // [L, KV, D], rows [0, pos+T) valid
  const T* v;      // [L, KV, D]
  T* o;            // [T, NH, D]
  const int* pos;  // [] first position of the call, read on the device (ROWS: [T], each row's position)
  const int* base = nullptr;  // ROWS: [T], each row's first cache row
  int tokens;      // T: query rows of the call
  int L;           // rows allocated in the cache; keys past it are never read
  float scale;     // softmax scale (the attention op's `scale` attribute)
  int window = 0;  // > 0: query t sees only keys pos+t-window+1 .. pos+t (sliding window)
};

namespace reference {

// Start of the running max: finite, so exp(m - m') is 0 (never NaN) before the first key.
constexpr float kNegBig = -3.0e38f;

// Lanes that share one key's dot product: THREADS/TILE (a power of two, 1 to 32), so one pass of
// the block scores the whole tile; no lane idles and the shuffles stay few.
__host__ __device__ constexpr int key_lanes(int threads, int tile) {
  return threads / tile < 1 ? 1 : threads / tile > 32 ? 32 : threads / tile;
}

// A if C, else B (NVRTC has no <type_traits>).
template <bool C, typename A, typename B> struct Select { using type = A; };
template <typename A, typename B> struct Select<false, A, B> { using type = B; };

// The block's shared memory, declared once by the entry (two instantiations of the body must not
// each declare their own).
struct Shared {
  float* q;    // [D] scaled query row
  float* k;    // [TILE, D+1] keys of the tile
  float* v;    // [TILE, D+1] values of the tile
  float* p;    // [TILE] scores, then probabilities
  float* max;  // [THREADS/32] per-warp score maxima
};

// One tile of K and V rows in flight in registers, in 16-byte pieces (D is a multiple of
// 16/sizeof(T) and both caches are 16-byte aligned): TILE rows of D elements spread over THREADS
// threads, row index fastest, so the threads of a warp write the same piece of different rows,
// which the odd row stride D+1 puts in different banks. load() issues every read of a tile at
// once (a constant count per thread, so they are all in flight together); store() converts them
// to fp32 into shared memory.
template <typename T, int D, int THREADS, int TILE>
struct TileLoader {
  static constexpr int kVec = static_cast<int>(16 / sizeof(T));  // elements per piece
  static constexpr int kPiecesPerRow = D / kVec;
  static constexpr int kPerThread = (TILE * kPiecesPerRow + THREADS - 1) / THREADS;
  static_assert(D % kVec == 0, "16-byte pieces must tile a row");
  uint4 k[kPerThread], v[kPerThread];

  // Keys [base, base + n) of one kv head; key j's row starts at k_head + j * row_stride.
  __device__ __forceinline__ void load(const T* k_head, const T* v_head, size_t row_stride, int base, int n) {
#pragma unroll
    for (int c = 0; c < kPerThread; ++c) {
      const int i = static_cast<int>(threadIdx.x) + c * THREADS;
      const int j = i % TILE, piece = i / TILE;
      if (j < n && piece < kPiecesPerRow) {
        const size_t g = static_cast<size_t>(base + j) * row_stride + static_cast<size_t>(piece) * kVec;
        k[c] = load16(k_head + g);
        v[c] = load16(v_head + g);
      }
    }
  }

  __device__ __forceinline__ void store(float* k_s, float* v_s, int n) const {
#pragma unroll
    for (int c = 0; c < kPerThread; ++c) {
      const int i = static_cast<int>(threadIdx.x) + c * THREADS;
      const int j = i % TILE, piece = i / TILE;
      if (j < n && piece < kPiecesPerRow) {
        const T* ke = reinterpret_cast<const T*>(&k[c]);
        const T* ve = reinterpret_cast<const T*>(&v[c]);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          k_s[j * (D + 1) + piece * kVec + e] = to_float(ke[e]);
          v_s[j * (D + 1) + piece * kVec + e] = to_float(ve[e]);
        }
      }
    }
  }
};

// The element-wise way (any D, any alignment): keys [base, base + n) read and stored one element
// at a time, consecutive threads on consecutive elements of a row.
template <typename T, int D, int THREADS>
__device__ __forceinline__ void stage_elementwise(const T* k_head, const T* v_head, size_t row_stride, int base, int n, float* k_s,
                                                  float* v_s) {
#pragma unroll 4
  for (int i = static_cast<int>(threadIdx.x); i < n * D; i += THREADS) {
    const int j = i / D, d = i - j * D;
    const size_t g = static_cast<size_t>(base + j) * row_stride + d;
    k_s[j * (D + 1) + d] = to_float(k_head[g]);
    v_s[j * (D + 1) + d] = to_float(v_head[g]);
  }
}

template <typename T, int D, int NH, int KV, int THREADS, int TILE, bool VECTOR, bool ROWS>
__device__ __forceinline__ void attend(const AttentionReferenceParams<T>& p, const Shared& s) {
  constexpr int kWarps = THREADS / 32;
  constexpr int kGroup = NH / KV;
  constexpr int kStride = D + 1;  // padded K and V rows in shared memory
  constexpr int kDimsPerThread = (D + THREADS - 1) / THREADS;
  constexpr int kKeyLanes = key_lanes(THREADS, TILE);
  static_assert((kKeyLanes & (kKeyLanes - 1)) == 0 && THREADS % kKeyLanes == 0, "key lanes tile a warp");
  constexpr int kKeysPerPass = THREADS / kKeyLanes;
  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, warp = tid / 32;
  const int t = static_cast<int>(blockIdx.x);
  const int head = static_cast<int>(blockIdx.y);
  if (t >= p.tokens) return;  // the whole block, before any barrier
  const int kv_head = head / kGroup;
  const int position = ROWS ? p.pos[t] : *p.pos + t;  // the query's position
  const int row0 = ROWS ? p.base[t] : 0;                // its sequence's first cache row
  int keys = position + 1;  // causal: keys first .. position
  if (keys > p.L - row0) keys = p.L - row0;
  const int first = p.window > 0 ? max(0, min(keys, position + 1 - p.window)) : 0;

  const T* q = p.q + (static_cast<size_t>(t) * NH + head) * D;  // [D]
  for (int d = tid; d < D; d += THREADS) s.q[d] = to_float(q[d]) * p.scale;

  constexpr size_t kRowStride = static_cast<size_t>(KV) * D;  // elements between consecutive keys
  const size_t head0 = static_cast<size_t>(row0) * kRowStride + static_cast<size_t>(kv_head) * D;
  const T* k_head = p.k + head0;  // key j's row: k_head + j * kRowStride
  const T* v_head = p.v + head0;
  // VECTOR: the first tile's reads go out now; each later tile's while the one before is computed.
  struct NoLoader {};
  using Loader = typename Select<VECTOR, TileLoader<T, D, THREADS, TILE>, NoLoader>::type;
  Loader tile;
  if constexpr (VECTOR) {
    if (keys > first) tile.load(k_head, v_head, kRowStride, first, min(TILE, keys - first));
  }

  float running_max = kNegBig, running_sum = 0.f;
  float acc[kDimsPerThread];
#pragma unroll
  for (int e = 0; e < kDimsPerThread; ++e) acc[e] = 0.f;
  const int key_lane = tid % kKeyLanes, key_slot = tid / kKeyLanes;

  for (int base = first; base < keys; base += TILE) {
    const int n = min(TILE, keys - base);  // keys in this tile
    if constexpr (VECTOR)
      tile.store(s.k, s.v, n);
    else
      stage_elementwise<T, D, THREADS>(k_head, v_head, kRowStride, base, n, s.k, s.v);
    __syncthreads();  // the tile (and the query row) are in shared memory
    if constexpr (VECTOR) {
      if (base + TILE < keys) tile.load(k_head, v_head, kRowStride, base + TILE, min(TILE, keys - base - TILE));
    }

    // Scores: every lane of a warp takes part in every pass (the shuffles need them all); lanes past
    // the tile's keys score the last key again and drop it.
    float tile_max = kNegBig;
    for (int j0 = 0; j0 < n; j0 += kKeysPerPass) {
      const int j = j0 + key_slot;
      const float* kr = s.k + (j < n ? j : n - 1) * kStride;
      float score = 0.f;
#pragma unroll
      for (int d = key_lane; d < D; d += kKeyLanes) score = fmaf(s.q[d], kr[d], score);
#pragma unroll
      for (int offset = kKeyLanes / 2; offset > 0; offset >>= 1) score += __shfl_xor_sync(0xffffffffu, score, offset);
      if (j < n) {
        if (key_lane == 0) s.p[j] = score;
        tile_max = fmaxf(tile_max, score);
      }
    }
    tile_max = warp_max(tile_max);
    if (lane == 0) s.max[warp] = tile_max;
    __syncthreads();  // scores and per-warp maxima are complete
#pragma unroll
    for (int w = 0; w < kWarps; ++w) tile_max = fmaxf(tile_max, s.max[w]);

    const float next_max = fmaxf(running_max, tile_max);
    const float alpha = expf(running_max - next_max);  // 0 before the first key
    for (int j = tid; j < n; j += THREADS) s.p[j] = expf(s.p[j] - next_max);
    __syncthreads();  // probabilities are complete
    running_max = next_max;

    if (tid < D) {  // the owners of output dimensions
      float tile_sum = 0.f;
      for (int j = 0; j < n; ++j) tile_sum += s.p[j];
      running_sum = running_sum * alpha + tile_sum;
#pragma unroll
      for (int e = 0; e < kDimsPerThread; ++e) {
        const int d = tid + e * THREADS;
        if (d < D) {
          float a = acc[e] * alpha;
#pragma unroll 4
          for (int j = 0; j < n; ++j) a = fmaf(s.p[j], s.v[j * kStride + d], a);
          acc[e] = a;
        }
      }
    }
    __syncthreads();  // the next tile overwrites k, v, p and max
  }

  T* o = p.o + (static_cast<size_t>(t) * NH + head) * D;  // [D]
  const float inv = running_sum > 0.f ? 1.f / running_sum : 0.f;  // no keys (an empty cache): zeros, not NaN
#pragma unroll
  for (int e = 0; e < kDimsPerThread; ++e) {
    const int d = tid + e * THREADS;
    if (d < D) o[d] = from_float<T>(acc[e] * inv);
  }
}

}  // namespace reference

template <typename T, int D, int NH, int KV, int THREADS, int TILE, bool ROWS = false>
__device__ __forceinline__ void attention_reference(const AttentionReferenceParams<T>& p) {
  static_assert(D >= 1 && NH % KV == 0 && THREADS % 32 == 0 && TILE >= 1, "shape");
  __shared__ float q_s[D];
  __shared__ float k_s[TILE * (D + 1)];
  __shared__ float v_s[TILE * (D + 1)];
  __shared__ float p_s[TILE];
  __shared__ float max_s[THREADS / 32];
  const reference::Shared s{q_s, k_s, v_s, p_s, max_s};
  constexpr int kVec = static_cast<int>(16 / sizeof(T));
  if constexpr (D % kVec == 0) {
    const bool aligned = ((reinterpret_cast<size_t>(p.k) | reinterpret_cast<size_t>(p.v)) & 15) == 0;
    if (aligned) {
      reference::attend<T, D, NH, KV, THREADS, TILE, true, ROWS>(p, s);
      return;
    }
  }
  reference::attend<T, D, NH, KV, THREADS, TILE, false, ROWS>(p, s);
}

}  // namespace ac
