// RoPE + QK-norm + KV-append family: the per-head work between the QKV projection and attention,
// in one pass over q, k and v.
//
// A region is up to three streams (q, k, v as the analyzer forms them), each a [T, H, D] input
// that may go through an rmsnorm (QK-norm), then rotate-half RoPE, and ends in an output [T, H, D]
// and/or a KV-cache append (rows [pos, pos+T) of a [L, H, D] state). The norm is per head (weight
// [D]) or, with norm_width = H*D, over the token's whole projection (weight [H*D], OLMo-2): then the
// lanes of each head row sum the squares of the token's whole row themselves (read H times, from L1
// and L2: a few hundred KB per thousand tokens). Norm weights are T or f32 (W). Rows
// (token, stream, head) are laid out token-major; a row is handled by D/2/VEC lanes, rounded up to a
// power of two (D = 96: 6 of 8 lanes at VEC 8), each owning VEC consecutive elements of the first
// half and the matching VEC of the second half, which is exactly what rotate-half pairs up, so no
// data crosses lanes except the rmsnorm sum.
// Angles: float(pos+t) * inv_freq in float32 (inv_freq is the rope op's table or the interpreter's,
// rendered as literals), reduced to [-pi, pi] in double so the hardware sin/cos stays accurate at
// positions of 40k and more (--use_fast_math would otherwise turn sincosf into __sincosf on the full
// angle); cos and sin are then multiplied by rope_scale (1 unless the rope op scales them).
// Activations and caches are f32, f16 or bf16 (T); a lane's VEC elements are one access of up to
// 16 bytes (two for 8 f32 values).
// ROWS (decode_batch, ir/decode_batch.h): token t is a row of its own sequence, at position pos[t],
// appended at cache row base[t] + pos[t]; ROWS = false compiles exactly the one-position kernel.
#pragma once

#include "common.cuh"
#include "rowwise.cuh"  // load_vec / store_vec: VEC elements of f32, f16 or bf16 per lane

namespace ac {

template <typename T, typename W = T>
struct RopeKvStream {
  const T* x;       // [T, H, D]
  const W* norm_w;  // [D] QK-norm weight ([H*D] with norm_width), or null for no norm
  T* out;           // [T, H, D], or null when the stream only feeds the cache
  T* cache;         // [L, H, D] state written at rows pos+t, or null
  int heads;
  int rope;         // 1: rotate-half RoPE
  int norm_width = 0;  // H*D: the norm is over the token's whole projection; 0: per head row
};

template <typename T, typename W = T>
struct RopeKvParams {
  RopeKvStream<T, W> s[3];
  const int* pos;          // i32 scalar in device memory: the first position of the call (ROWS: i32[T], per row)
  const int* base = nullptr;  // ROWS: i32[T], each row's first cache row (its sequence's slot)
  const float* inv_freq;   // [D/2], or null when no stream is rotated
  float eps;               // rmsnorm epsilon
  int tokens;              // T of the call
  int L;                   // cache rows
  float rope_scale = 1.f;  // factor on cos and sin
};

// cos/sin of a float angle of any size: exact-enough reduction to [-pi, pi] in double (angles are
// below 2^24, so k has at most 22 bits and k * 2pi keeps ~30 bits of margin), then sin/cos there.
__device__ __forceinline__ void rope_sincos(float angle, float* s, float* c) {
  const double a = static_cast<double>(angle);
  const double k = rint(a * 0.15915494309189535);  // 1 / (2 pi)
  const float r = static_cast<float>(fma(-k, 6.283185307179586, a));
  __sincosf(r, s, c);
}

// Rows of D/2/VEC lanes padded to a power of two, which tiles a warp.
__host__ __device__ constexpr int rope_row_lanes(int used) { return used <= 1 ? 1 : 2 * rope_row_lanes((used + 1) / 2); }

template <typename T, int D, int VEC, int THREADS, int STREAMS, typename W = T, bool ROWS = false>
__device__ __forceinline__ void rope_kv(const RopeKvParams<T, W>& p) {
  constexpr int kHalf = D / 2;
  constexpr int kUsedLanes = kHalf / VEC;                // lanes that own elements of a row
  constexpr int kLanes = rope_row_lanes(kUsedLanes);     // lanes per row
  constexpr int kRowsPerBlock = THREADS / kLanes;
  static_assert(kHalf % VEC == 0 && 32 % kLanes == 0, "a row's lanes must tile a warp");

  int heads_per_token = 0;
#pragma unroll
  for (int s = 0; s < STREAMS; ++s) heads_per_token += p.s[s].heads;
  const int rows = p.tokens * heads_per_token;
  const int row = blockIdx.x * kRowsPerBlock + static_cast<int>(threadIdx.x) / kLanes;
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const bool active = row < rows;
  const bool owner = active && (kUsedLanes == kLanes || lane < kUsedLanes);  // the lane holds elements
  const int pos = ROWS ? 0 : *p.pos;

  // Which stream and head this row is.
  const int t = active ? row / heads_per_token : 0;
  int head = active ? row % heads_per_token : 0;
  int stream = 0;
#pragma unroll
  for (int s = 0; s < STREAMS - 1; ++s)
    if (stream == s && head >= p.s[s].heads) {
      head -= p.s[s].heads;
      stream = s + 1;
    }
  RopeKvStream<T, W> st = p.s[0];  // selected by constant indices, so it stays in registers
#pragma unroll
  for (int s = 1; s < STREAMS; ++s)
    if (stream == s) st = p.s[s];
  const size_t src_row = (static_cast<size_t>(t) * st.heads + head) * D;  // into [T, H, D]
  const int i0 = lane * VEC;

  float x1[VEC], x2[VEC];
  if (owner) {
    load_vec<T, VEC>(st.x + src_row + i0, x1);
    load_vec<T, VEC>(st.x + src_row + kHalf + i0, x2);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) x1[i] = x2[i] = 0.f;
  }

  // QK-norm: every lane takes part in the row sum (rows of different streams share a warp). A norm
  // over the whole projection sums the token's row of every head instead.
  float squares = 0.f;
  if (active && st.norm_width > 0) {
    const T* token_row = st.x + static_cast<size_t>(t) * st.norm_width;  // [H*D]
    for (int c = lane * VEC; c < st.norm_width; c += kLanes * VEC) {
      float v[VEC];
      load_vec<T, VEC>(token_row + c, v);
#pragma unroll
      for (int i = 0; i < VEC; ++i) squares += v[i] * v[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) squares += x1[i] * x1[i] + x2[i] * x2[i];
  }
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset >>= 1) squares += __shfl_xor_sync(0xffffffffu, squares, offset);
  if (!owner) return;
  if (st.norm_w) {
    const int width = st.norm_width > 0 ? st.norm_width : D;
    const float inv = rsqrtf(squares * (1.f / width) + p.eps);
    const W* w = st.norm_w + (st.norm_width > 0 ? head * D : 0);  // this head's weights
    float w1[VEC], w2[VEC];
    load_vec<W, VEC>(w + i0, w1);
    load_vec<W, VEC>(w + kHalf + i0, w2);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      x1[i] = w1[i] * (x1[i] * inv);
      x2[i] = w2[i] * (x2[i] * inv);
    }
  }

  if (st.rope) {
    const float position = static_cast<float>(ROWS ? p.pos[t] : pos + t);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      float s, c;
      rope_sincos(position * p.inv_freq[i0 + i], &s, &c);
      s *= p.rope_scale;
      c *= p.rope_scale;
      const float a = x1[i], b = x2[i];
      x1[i] = a * c - b * s;
      x2[i] = b * c + a * s;
    }
  }

  if (st.out) {
    store_vec<T, VEC>(st.out + src_row + i0, x1);
    store_vec<T, VEC>(st.out + src_row + kHalf + i0, x2);
  }
  const int cache_row = ROWS ? p.base[t] + p.pos[t] : pos + t;
  if (st.cache && cache_row < p.L) {
    T* dst = st.cache + (static_cast<size_t>(cache_row) * st.heads + head) * D;  // row of [L, H, D]
    store_vec<T, VEC>(dst + i0, x1);
    store_vec<T, VEC>(dst + kHalf + i0, x2);
  }
}

}  // namespace ac
