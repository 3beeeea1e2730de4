// Prefill attention family: o[t, h] = softmax(scale * q[t, h] · K[f .. pos+t, h/G]ᵀ) · V[f .. pos+t, h/G]
// for T queries at absolute positions pos .. pos+T-1 over a KV cache that already holds rows
// [0, pos+T) (causal with a position offset, GQA with G = NH/KV query heads per KV head); f is 0, or
// with a sliding window (window > 0) max(0, pos+t-window+1).
//
// attention_prefill_mma (FlashAttention-2): a block owns BLOCK_M query rows of one head, each warp
// 16 or 32 of them. Q is staged once and held in registers as mma A-fragments; K/V tiles of BLOCK_N keys
// stream through a STAGES-deep cp.async ring in XOR-swizzled shared memory (16-byte chunk c of row r
// sits at chunk c ^ (r & 7), so the 8 row addresses of every ldmatrix hit distinct banks).
// S = Q·Kᵀ and O += P·V run on mma.sync m16n8k16 with fp32 accumulators; the online softmax keeps a
// running max and sum per row in fp32, and P is rounded to the activation dtype in registers, where
// the S accumulator layout already is the A-fragment layout of the P·V product. Key tiles past the
// block's last visible key are never loaded, nor with a window the tiles before its first row's first
// key; only tiles that cross the causal diagonal or a window's lower edge are masked; a warp skips the
// compute of a tile no row of its own can see. Blocks are issued heaviest first (the last query tiles
// see the most keys) so the causal imbalance does not leave a tail. D = 96 rows sit in shared memory
// at a pitch of 128 (the swizzle needs 8 chunks per row group; chunks 12..15 are never read).
//
// attention_prefill_simt: the obviously-correct fallback, one warp per query row, an fp32 online
// softmax over the keys one at a time (a warp reduction per key). Also a fair choice for tiny T.
#pragma once

#include "common.cuh"

namespace ac {

template <typename T>
struct AttentionPrefillParams {
  const T* q;      // [T, NH, D]
  const T* k;      // [L, KV, D], rows [0, pos+T) valid
  const T* v;      // [L, KV, D]
  T* o;            // [T, NH, D]
  const int* pos;  // [] first position of the call, read on the device
  int tokens;  // T
  float scale;
  int window = 0;  // > 0: query t sees keys pos+t-window+1 .. pos+t only
};

namespace flash {

// NVRTC has no <cmath>, hence no INFINITY.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// 2^x on the SFU without exp2f's denormal fix-up (probabilities that small round to 0 in P anyway);
// 2^-inf = +0.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// smem_u32 and the cp.async helpers: common.cuh.

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// c[16x8] += a[16x16] · b[16x8], fp32 accumulate.
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <>
__device__ __forceinline__ void mma16816<__half>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats rounded into one register, `lo` in the low half (the element with the lower index).
template <typename T>
__device__ __forceinline__ unsigned pack2(float lo, float hi);
template <>
__device__ __forceinline__ unsigned pack2<__half>(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}
template <>
__device__ __forceinline__ unsigned pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled [rows, D] tile.
template <int D>
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * D + ((chunk ^ (row & 7)) << 3);
}

// The shared-memory pitch of a D-wide row: D, or the next power of two where D/8 chunks are not a
// multiple of 8 (D = 96: 128), so every row group of 8 spans whole swizzle periods.
template <int D>
__host__ __device__ constexpr int smem_pitch() { return D % 64 == 0 ? D : D <= 128 ? 128 : 256; }

// Rows [0, ROWS) of a tile whose row r starts at base + r * STRIDE; rows >= valid are zero-filled
// (their source clamped to row 0, which always exists). A thread copies the same chunk of rows
// r0, r0 + kRowsPerPass, ...; kRowsPerPass is a multiple of 8, so all share one swizzle and every
// address is the first one plus a constant. With a padded pitch (DP > D), the threads of the padding
// chunks copy nothing: those chunks are never read.
template <typename T, int ROWS, int D, int THREADS, int STRIDE, int DP = D>
__device__ __forceinline__ void load_tile(T* tile, const T* base, int valid) {
  constexpr int kChunks = DP / 8;
  constexpr int kRowsPerPass = THREADS / kChunks;
  static_assert(THREADS % kChunks == 0 && kRowsPerPass % 8 == 0 && ROWS % kRowsPerPass == 0, "tile rows per pass");
  const int r0 = static_cast<int>(threadIdx.x) / kChunks, chunk = static_cast<int>(threadIdx.x) % kChunks;
  if (DP != D && chunk >= D / 8) return;
  T* dst = tile + swizzle<DP>(r0, chunk);
  const T* src = base + r0 * STRIDE + chunk * 8;
#pragma unroll
  for (int i = 0; i < ROWS / kRowsPerPass; ++i) {
    const bool ok = r0 + i * kRowsPerPass < valid;
    cp_async16(smem_u32(dst + i * kRowsPerPass * DP), ok ? src + static_cast<size_t>(i) * kRowsPerPass * STRIDE : base, ok);
  }
}

}  // namespace flash

// Dynamic shared memory: (BLOCK_M + 2 * STAGES * BLOCK_N) * smem_pitch<D>() elements. Grid: x = ceil(T / BLOCK_M),
// y = NH; block: WARPS warps of BLOCK_M / WARPS rows (16 or 32: one or two m16 tiles, the second
// reusing every K/V fragment the warp loads, which halves shared-memory reads per mma).
template <typename T, int D, int NH, int KV, int BLOCK_M, int BLOCK_N, int WARPS, int STAGES>
__device__ __forceinline__ void attention_prefill_mma(const AttentionPrefillParams<T>& p) {
  constexpr int kThreads = WARPS * 32;
  constexpr int kMT = BLOCK_M / (16 * WARPS);  // m16 tiles per warp
  constexpr int kWarpRows = 16 * kMT;
  constexpr int kQK = D / 16;       // k-steps of S = Q·Kᵀ
  constexpr int kNT = BLOCK_N / 8;  // n-tiles of S
  constexpr int kPV = BLOCK_N / 16; // k-steps of O += P·V
  constexpr int kDT = D / 8;        // n-tiles of O
  constexpr int DP = flash::smem_pitch<D>();  // shared-memory row pitch
  static_assert(D % 16 == 0 && D / 8 >= 8, "D: a multiple of 16, at least 64 (swizzle span)");
  static_assert(kMT >= 1 && kWarpRows * WARPS == BLOCK_M && BLOCK_N % 16 == 0 && STAGES >= 2, "tile shape");
  static_assert(NH % KV == 0, "GQA: query heads a multiple of KV heads");

  extern __shared__ __align__(128) unsigned char smem[];
  T* q_tile = reinterpret_cast<T*>(smem);        // [BLOCK_M, DP]
  T* k_ring = q_tile + BLOCK_M * DP;             // [STAGES, BLOCK_N, DP]
  T* v_ring = k_ring + STAGES * BLOCK_N * DP;    // [STAGES, BLOCK_N, DP]

  // Heaviest query tiles first, every head of one tile next to each other (GQA heads share K/V in L2).
  const int linear = static_cast<int>(blockIdx.y * gridDim.x + blockIdx.x);
  const int head = linear % NH;
  const int q_start = (static_cast<int>(gridDim.x) - 1 - linear / NH) * BLOCK_M;
  const int tokens = p.tokens;
  const int pos = *p.pos;
  const int kv_head = head / (NH / KV);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int group = lane / 4, quad_lane = lane % 4;  // mma fragment coordinates
  const int n_keys = pos + min(q_start + BLOCK_M, tokens);  // keys any row of this block sees
  const int window = p.window;
  // With a window, tiles before the one holding the block's first row's first key are never needed.
  const int first_tile = window > 0 ? max(0, pos + q_start - window + 1) / BLOCK_N : 0;
  const int n_tiles = (n_keys + BLOCK_N - 1) / BLOCK_N;

  // Tiles first_tile, first_tile + 1, ...; the i-th of them goes to ring slot i % STAGES.
  auto load_kv = [&](int tile) {
    const int key0 = tile * BLOCK_N;
    const size_t offset = (static_cast<size_t>(key0) * KV + kv_head) * D;
    const int slot = (tile - first_tile) % STAGES;
    flash::load_tile<T, BLOCK_N, D, kThreads, KV * D, DP>(k_ring + slot * BLOCK_N * DP, p.k + offset, n_keys - key0);
    flash::load_tile<T, BLOCK_N, D, kThreads, KV * D, DP>(v_ring + slot * BLOCK_N * DP, p.v + offset, n_keys - key0);
  };

  flash::load_tile<T, BLOCK_M, D, kThreads, NH * D, DP>(q_tile, p.q + (static_cast<size_t>(q_start) * NH + head) * D,
                                                        tokens - q_start);
  cp_async_commit();
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (first_tile + s < n_tiles) load_kv(first_tile + s);
    cp_async_commit();  // empty groups keep the count uniform
  }
  cp_async_wait<STAGES - 1>();  // the Q group
  __syncthreads();

  const int row0 = warp * kWarpRows;   // this warp's rows in the block
  const int t_first = q_start + row0;  // its first query; m-tile mt holds t_first + 16mt ..
  unsigned q_frag[kMT][kQK][4];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int kk = 0; kk < kQK; ++kk)
      flash::ldmatrix_x4(q_frag[mt][kk], smem_u32(q_tile + flash::swizzle<DP>(row0 + 16 * mt + lane % 16, 2 * kk + lane / 16)));

  float o[kMT][kDT][4];
  float row_max[kMT][2], row_sum[kMT][2];  // rows group and group + 8 of each m-tile; max of raw scores,
#pragma unroll                              // sum of this lane's share (the quad is summed at the end)
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.f;
    row_max[mt][0] = row_max[mt][1] = flash::neg_inf();
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }
  const float scale_log2 = p.scale * 1.4426950408889634f;

  // Keys of the warp's rows: its first row sees the lowest window edge, its last row the highest.
  const int warp_first_key = window > 0 ? pos + t_first - window + 1 : 0;
  const int warp_edge = window > 0 ? pos + t_first + kWarpRows - 1 - window + 1 : 0;
  for (int n = first_tile; n < n_tiles; ++n) {
    if (n + STAGES - 1 < n_tiles) load_kv(n + STAGES - 1);
    cp_async_commit();
    cp_async_wait<STAGES - 1>();  // tile n has landed
    __syncthreads();
    const int key0 = n * BLOCK_N;
    const int slot = (n - first_tile) % STAGES;
    // Else no row of this warp sees the tile: it is past the diagonal or before the window.
    if (t_first < tokens && key0 <= pos + t_first + kWarpRows - 1 && key0 + BLOCK_N - 1 >= warp_first_key) {
      const T* k_tile = k_ring + slot * BLOCK_N * DP;
      const T* v_tile = v_ring + slot * BLOCK_N * DP;

      float s[kMT][kNT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
      for (int kk = 0; kk < kQK; ++kk) {
#pragma unroll
        for (int nt = 0; nt < kNT; nt += 2) {
          // x4: keys nt*8+0..7 | d 16kk+0..7, +8..15; then keys nt*8+8..15 likewise (two n-tiles' B).
          unsigned b[4];
          flash::ldmatrix_x4(b, smem_u32(k_tile + flash::swizzle<DP>(nt * 8 + lane % 8 + (lane / 16) * 8, 2 * kk + (lane / 8) % 2)));
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            flash::mma16816<T>(s[mt][nt], q_frag[mt][kk], b[0], b[1]);
            flash::mma16816<T>(s[mt][nt + 1], q_frag[mt][kk], b[2], b[3]);
          }
        }
      }

      // The tile crosses the diagonal of this warp's rows, or a window's lower edge.
      if (key0 + BLOCK_N - 1 > pos + t_first || key0 < warp_edge) {
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = key0 + nt * 8 + 2 * quad_lane + (e & 1);
              const int t = t_first + 16 * mt + group + (e >> 1) * 8;
              if (key > pos + t || (window > 0 && key < pos + t - window + 1)) s[mt][nt][e] = flash::neg_inf();
            }
      }

      // Online softmax; a row's 4 lanes (one quad) share its max.
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float mx = row_max[mt][r];
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float max_scaled = mx == flash::neg_inf() ? 0.f : mx * scale_log2;
          const float alpha = flash::fast_exp2(row_max[mt][r] * scale_log2 - max_scaled);  // 0 on the first tile
          row_max[mt][r] = mx;
          float sum = 0.f;
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt) {
            s[mt][nt][2 * r] = flash::fast_exp2(fmaf(s[mt][nt][2 * r], scale_log2, -max_scaled));
            s[mt][nt][2 * r + 1] = flash::fast_exp2(fmaf(s[mt][nt][2 * r + 1], scale_log2, -max_scaled));
            sum += s[mt][nt][2 * r] + s[mt][nt][2 * r + 1];
          }
          row_sum[mt][r] = row_sum[mt][r] * alpha + sum;
#pragma unroll
          for (int dt = 0; dt < kDT; ++dt) {
            o[mt][dt][2 * r] *= alpha;
            o[mt][dt][2 * r + 1] *= alpha;
          }
        }

#pragma unroll
      for (int kk = 0; kk < kPV; ++kk) {
        // S n-tiles 2kk and 2kk+1 are, element for element, the A-fragment of P for keys 16kk..16kk+15.
        unsigned a[kMT][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          a[mt][0] = flash::pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
          a[mt][1] = flash::pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
          a[mt][2] = flash::pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
          a[mt][3] = flash::pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
        }
#pragma unroll
        for (int dt = 0; dt < kDT; dt += 2) {
          // x4.trans: keys 16kk+0..7, +8..15 | d 8dt..8dt+7; then d 8dt+8..8dt+15 likewise (two n-tiles' B).
          unsigned b[4];
          flash::ldmatrix_x4_trans(b, smem_u32(v_tile + flash::swizzle<DP>(16 * kk + lane % 8 + ((lane / 8) % 2) * 8, dt + lane / 16)));
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            flash::mma16816<T>(o[mt][dt], a[mt], b[0], b[1]);
            flash::mma16816<T>(o[mt][dt + 1], a[mt], b[2], b[3]);
          }
        }
      }
    }
    __syncthreads();  // the slot of tile n is refilled next iteration
  }

#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.f ? 1.f / sum : 0.f;
      const int t = t_first + 16 * mt + group + r * 8;
      if (t >= tokens) continue;
      T* out = p.o + (static_cast<size_t>(t) * NH + head) * D + 2 * quad_lane;  // [D] row of (t, head)
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<unsigned*>(out + dt * 8) = flash::pack2<T>(o[mt][dt][2 * r] * inv, o[mt][dt][2 * r + 1] * inv);
    }
}

// Grid: x = ceil(T / WARPS), y = NH; block: WARPS warps, one query row each.
template <typename T, int D, int NH, int KV, int WARPS>
__device__ __forceinline__ void attention_prefill_simt(const AttentionPrefillParams<T>& p) {
  constexpr int kPerLane = D / 32;
  static_assert(D % 32 == 0 && NH % KV == 0, "shape");
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int t = static_cast<int>(blockIdx.x) * WARPS + static_cast<int>(threadIdx.x) / 32;
  const int head = static_cast<int>(blockIdx.y);
  if (t >= p.tokens) return;
  const int keys = *p.pos + t + 1;  // keys first .. pos+t
  const int first = p.window > 0 ? max(0, keys - p.window) : 0;
  const int kv_head = head / (NH / KV);

  const T* q = p.q + (static_cast<size_t>(t) * NH + head) * D + lane * kPerLane;  // this lane's dims
  float qs[kPerLane], acc[kPerLane];
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    qs[e] = to_float(q[e]) * p.scale;
    acc[e] = 0.f;
  }
  float running_max = flash::neg_inf(), running_sum = 0.f;
  for (int j = first; j < keys; ++j) {
    const size_t row = (static_cast<size_t>(j) * KV + kv_head) * D + lane * kPerLane;
    float score = 0.f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) score = fmaf(qs[e], to_float(p.k[row + e]), score);
    score = warp_sum(score);
    const float next_max = fmaxf(running_max, score);
    const float alpha = expf(running_max - next_max);  // 0 for the first key
    const float weight = expf(score - next_max);
    running_sum = running_sum * alpha + weight;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) acc[e] = fmaf(weight, to_float(p.v[row + e]), acc[e] * alpha);
    running_max = next_max;
  }
  T* out = p.o + (static_cast<size_t>(t) * NH + head) * D + lane * kPerLane;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) out[e] = from_float<T>(acc[e] / running_sum);
}

}  // namespace ac
