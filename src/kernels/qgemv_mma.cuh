// Quantized GEMV on the tensor cores, for int4 weights in groups (ir/quant.h; with or without zero
// points, or with offsets) and int8 weights (per channel, or in groups of 32: GGUF Q8_0's values), with f16 activations: y[t, n] = epilogue(sum_k W[n, k] * x[t, k]) with the dot products done
// by mma.sync m16n8k16 (f16 inputs, f32 accumulators) instead of one f32 FMA per element. The scalar
// kernel (qgemv.cuh) issues ~200 instructions per 16-byte load in its main loop (a shift, a logic op,
// an add and an FMA per element, x's unpacking, moving the next batch's registers) and so is bound by
// issue, not by memory; here a load costs ~75 (sm_90a SASS of Qwen3-1.7B's gate/up and down
// candidates; 80 with zero points): 4 shifts, 16 logic ops and 16 f16x2 subtracts or fmas to
// dequantize, 8 mmas, 4 shared loads of x, and the chunk's scale.
//
// Mapping (no repacking of the weights): a warp computes 8 rows of W per tile. Lane (g = lane / 4,
// t = lane % 4) loads 16 bytes (32 int4) of row g at chunk t of the current 128-element slab of K,
// exactly as the rows are stored, and supplies them as the mma's B operand (k x n, column n = row g):
// per mma 4 values, two f16 pairs. Word h of the load holds elements 8h .. 8h+7 (low nibble first);
// (w & 0x000f000f) | 0x64006400 is the f16 pair (1024 + n_0, 1024 + n_4), the mask 0x00f000f0 gives
// (1024 + 16 n_1, 1024 + 16 n_5), and the same of w >> 8 give elements 2, 6 and 3, 7; subtracting
// 1024 + z (or multiplying by 1/16 and subtracting 64 + z in one fma) leaves n − z exactly.
// x is the A operand. Since a dot product does not care about the order of k, x is permuted when it
// is staged in shared memory: every 8 elements are stored as (e0, e4, e1, e5, e2, e6, e3, e7), so one
// 16-byte shared load is a whole A fragment (rows g and g+8) for two mmas (qmma_chunk).
// Groups and scales, exact in f32 whatever the group: A's rows r and r+8 (r = 0..3) hold x only at
// the k of chunk r (the lanes g == t load x, every other lane loads zeros), so those rows of the
// product are the dot of chunk r alone: every chunk lies in one group (G is a multiple of 32), and the
// lanes 0..15 each hold a per-chunk partial for rows 2t, 2t+1 that they scale by that chunk's group
// scale (fetched from the loading lane by a shuffle) and add into f32 accumulators; the four chunks'
// sums meet in two shuffles at the end. No f16 accumulation anywhere: the f16 values are n − z
// (exact) and x (as stored); products and sums are the mma's f32.
// Offsets (x = s·n + m, GGUF Q4_1's values; groups of 32): the mma sums n·x (z = 0) and each row adds
// m times its chunk's Σx, the sums of x's 32-element chunks computed once into shared memory.
// int8: a 16-byte load is 16 elements, so a slab is 64 elements and a chunk feeds 4 mmas. Word h holds
// elements 4h .. 4h+3; a signed byte with its sign bit flipped is b + 128, and the byte permute
// (b + 128, 0x64) is the f16 1024 + 128 + b, so one permute and one f16x2 subtract give the pair
// (b_0, b_1) exactly. x is permuted in pairs, every 8 elements stored as (e0, e1, e4, e5, e2, e3, e6, e7),
// so one 16-byte shared load is again a whole A fragment for two mmas (qmma_chunk_i8). Per channel, the
// chunk partials are summed unscaled and the row's scale multiplies the total; in groups (of 32: a chunk
// lies in one), each partial takes its group's scale as int4's do.
//
// Everything else is the scalar kernel's: one token per blockIdx.y, ROWS rows per warp (8 or 16: one
// or two tiles), UNROLL slabs in flight per tile, SPLIT warps over K (in whole slabs), the epilogues
// (plain with bias, residual add, gate/up act·mul, multi-segment rows), the RMSNorm / residual-norm
// prologues while x is staged, and the first batch of weight loads issued before the
// programmatic-dependent-launch wait. Compiles for sm_80 and later (mma.sync m16n8k16).
#pragma once

#include "activation.cuh"
#include "common.cuh"
#include "dequant.cuh"
#include "gemv.cuh"
#include "qgemv.cuh"

namespace ac {

// Elements of one lane's 16-byte chunk, and of K a warp covers per step (4 lanes t): 32 int4 or 16 int8.
template <int FORMAT>
constexpr int kQMmaChunk = kQInt8Bytes<FORMAT> ? 16 : 32;
template <int FORMAT>
constexpr int kQMmaSlab = 4 * kQMmaChunk<FORMAT>;

// d += A·B for one m16n8k16 tile, f16 inputs, f32 accumulators: a = A's rows g and g+8 at columns
// (2t, 2t+1) and (2t+8, 2t+9) as the fragment orders them (a0: row g, a1: row g+8, a2: row g,
// a3: row g+8), b0 / b1 = B's rows (2t, 2t+1) / (2t+8, 2t+9) at column g.
__device__ __forceinline__ void qmma_m16n8k16(float (&d)[4], uint4 a, unsigned int b0, unsigned int b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}

// (w & mask) | magic in one logic op.
__device__ __forceinline__ unsigned int qmma_and_or(unsigned int w, unsigned int mask, unsigned int magic) {
  unsigned int d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(d) : "r"(w), "r"(mask), "r"(magic));
  return d;
}

__device__ __forceinline__ unsigned int qmma_sub_f16x2(unsigned int a, unsigned int b) {
  unsigned int d;
  asm("sub.rn.f16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

__device__ __forceinline__ unsigned int qmma_fma_f16x2(unsigned int a, unsigned int b, unsigned int c) {
  unsigned int d;
  asm("fma.rn.f16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// The f16 pairs a zero point z (0..15) is taken off with: (1024 + z, 1024 + z) for the low nibbles
// and −(64 + z) twice for the high ones (f16 has a spacing of 1/16 at 64, so 64 + z is 0x5400 + 16 z).
// One lane's 16-byte chunk with its group's scale (16 bits) and zero point, as loaded.
struct QMmaLoad {
  uint4 q;
  unsigned int scale;
  unsigned int zero;
};

struct QMmaZero {
  unsigned int low;
  unsigned int high;
};
__device__ __forceinline__ QMmaZero qmma_zero(unsigned int z) {
  return {(0x6400u | z) * 0x10001u, (0xD400u | (z << 4)) * 0x10001u};
}

// One lane's 32 elements through the tensor cores: x points at the chunk's 32 permuted values (or at
// zeros) in shared memory. Word h's 16-byte x load is a whole A fragment: rows g / g+8 at k (2t, 2t+1)
// hold the x pairs (e0, e4) / (e1, e5), at k (2t+8, 2t+9) the pairs (e2, e6) / (e3, e7). With B the
// pairs (e0, e4), (e2, e6), row g of the product (d04[0], d04[1]) sums the elements 0, 4, 2, 6 (row
// g+8 mixes pairs and is not read); with B (e1, e5), (e3, e7), row g+8 (d15[2], d15[3]) sums 1, 5, 3, 7.
// Every register comes from the loads as it lands: no moves into the fragments.
template <typename T>
__device__ __forceinline__ void qmma_chunk(float (&d04)[4], float (&d15)[4], uint4 q, const T* x, QMmaZero zero) {
  constexpr unsigned int kMagic = 0x64006400u, kLow = 0x000f000fu, kHigh = 0x00f000f0u;
  constexpr unsigned int kSixteenth = 0x2C002C00u;  // (1/16, 1/16)
  const unsigned int words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const uint4 a = *reinterpret_cast<const uint4*>(x + 8 * h);
    const unsigned int w = words[h], w8 = w >> 8;
    const unsigned int b04 = qmma_sub_f16x2(qmma_and_or(w, kLow, kMagic), zero.low);
    const unsigned int b15 = qmma_fma_f16x2(qmma_and_or(w, kHigh, kMagic), kSixteenth, zero.high);
    const unsigned int b26 = qmma_sub_f16x2(qmma_and_or(w8, kLow, kMagic), zero.low);
    const unsigned int b37 = qmma_fma_f16x2(qmma_and_or(w8, kHigh, kMagic), kSixteenth, zero.high);
    qmma_m16n8k16(d04, a, b04, b26);
    qmma_m16n8k16(d15, a, b15, b37);
  }
}

// One lane's 16 int8 elements through the tensor cores: x points at the chunk's 16 pair-permuted values
// (or at zeros). With the x load h = (e0 e1 | e4 e5 | e2 e3 | e6 e7) as (a0, a1, a2, a3), B from word 2h
// (e0 e1, e2 e3) makes row g of `lo` (lo[0], lo[1]) the sum over elements 0..3, and B from word 2h + 1
// (e4 e5, e6 e7) row g+8 of `hi` (hi[2], hi[3]) the sum over 4..7.
template <typename T>
__device__ __forceinline__ void qmma_chunk_i8(float (&lo)[4], float (&hi)[4], uint4 q, const T* x) {
  constexpr unsigned int kFlip = 0x80808080u, kMagic = 0x64646464u, kBias = 0x64806480u;  // (1152, 1152)
  const unsigned int words[4] = {q.x ^ kFlip, q.y ^ kFlip, q.z ^ kFlip, q.w ^ kFlip};
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint4 a = *reinterpret_cast<const uint4*>(x + 8 * h);
    const unsigned int w0 = words[2 * h], w1 = words[2 * h + 1];
    const unsigned int b01 = qmma_sub_f16x2(__byte_perm(w0, kMagic, 0x4140), kBias);
    const unsigned int b23 = qmma_sub_f16x2(__byte_perm(w0, kMagic, 0x4342), kBias);
    const unsigned int b45 = qmma_sub_f16x2(__byte_perm(w1, kMagic, 0x4140), kBias);
    const unsigned int b67 = qmma_sub_f16x2(__byte_perm(w1, kMagic, 0x4342), kBias);
    qmma_m16n8k16(lo, a, b01, b23);
    qmma_m16n8k16(hi, a, b45, b67);
  }
}

// Permutes the staged x in place, every 8 elements to (e0, e4, e1, e5, e2, e6, e3, e7) (each thread
// owns whole groups of 8, so no thread reads another's), and zeroes the 32 elements the lanes that
// supply no x read. Ends with the block's barrier.
template <typename T, int THREADS, int FORMAT>
__device__ __forceinline__ void qmma_permute_x(T* xs, int K, T* zeros) {
  for (int i = threadIdx.x * 8; i < K; i += THREADS * 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(xs + i);
    uint4 out;
    if constexpr (kQInt8Bytes<FORMAT>) {  // pairs: (e0 e1, e4 e5, e2 e3, e6 e7)
      out = make_uint4(v.x, v.z, v.y, v.w);
    } else {
      out.x = __byte_perm(v.x, v.z, 0x5410);
      out.y = __byte_perm(v.x, v.z, 0x7632);
      out.z = __byte_perm(v.y, v.w, 0x5410);
      out.w = __byte_perm(v.y, v.w, 0x7632);
    }
    *reinterpret_cast<uint4*>(xs + i) = out;
  }
  if (threadIdx.x < 4) reinterpret_cast<uint4*>(zeros)[threadIdx.x] = make_uint4(0u, 0u, 0u, 0u);
  __syncthreads();
}

template <typename T, typename OutT, typename S, int FORMAT, int G, int ROW_BYTES, int THREADS, int ROWS, int UNROLL, int SPLIT,
          int EPILOGUE, int KMAX, int PROLOGUE = kGemvNoNorm, int ACT = kActSilu, typename W = T>
__device__ __forceinline__ void qgemv_mma(const QGemvParams<T, OutT, W>& qp) {
  static_assert(FORMAT == kQInt4 || FORMAT == kQInt4Zp || FORMAT == kQInt4Offset || FORMAT == kQInt8 || FORMAT == kQInt8Group,
                "the tensor-core GEMV reads int4 groups and int8");
  static_assert(FORMAT != kQInt8Group || G == 32, "int8 groups: one group per two 16-element chunks");
  constexpr bool kInt8 = kQInt8Bytes<FORMAT>;
  constexpr int kChunk = kQMmaChunk<FORMAT>, kSlab = kQMmaSlab<FORMAT>;
  // Bytes of `e` quantized elements.
  auto qbytes = [](int e) { return kInt8 ? e : e / 2; };
  static_assert(FORMAT != kQInt4Offset || G == 32, "offsets: one group per 32-element chunk");
  static_assert(sizeof(T) == 2 && G % 32 == 0 && ROWS % 8 == 0, "f16 activations, groups of whole chunks, tiles of 8 rows");
  constexpr int kTiles = ROWS / 8;
  constexpr int kWarps = THREADS / 32;
  constexpr int kRowWarps = kWarps / SPLIT;
  constexpr int kMats = EPILOGUE == kGemvGateUp ? 2 : 1;
  // The zeros sit 32 bytes past a 128-byte boundary: the lanes reading them at word h hit banks
  // 8 + 4h .. 11 + 4h, never those of the x chunks read beside them (4h .., 16 + 4h ..).
  constexpr int kZeros = (KMAX + 63) / 64 * 64 + 16;
  __shared__ __align__(16) T xs[kZeros + 32];
  // The offset format's Σx of every 32-element chunk of K (zero past K, and 4 more for the lanes g >= 4).
  constexpr int kChunkSums = FORMAT == kQInt4Offset ? (KMAX + kSlab - 1) / kSlab * 4 + 4 : 1;
  __shared__ float chunk_sum[kChunkSums];
  __shared__ float partial[SPLIT > 1 ? kWarps * ROWS * kMats : 1];

  // This block's token: its rows of x, the residual and the outputs.
  GemvParams<T, OutT, W> p = qp.g;
  const int token = blockIdx.y;
  p.x += static_cast<long long>(token) * qp.x_stride;
  if (p.residual) p.residual += static_cast<long long>(token) * qp.residual_stride;
#pragma unroll
  for (int s = 0; s < 3; ++s)
    if (p.y[s]) p.y[s] += static_cast<long long>(token) * (EPILOGUE == kGemvGateUp ? p.rows[0] : p.rows[s]);

  const int K = p.K;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row_warp = warp % kRowWarps, split = warp / kRowWarps;
  const int total_rows = p.rows[0] + p.rows[1] + p.rows[2];
  const int row0 = (blockIdx.x * kRowWarps + row_warp) * ROWS;

  // The row this lane loads in each tile (row g of the tile; past the end it reads row 0, unused).
  const unsigned char* wrow[kTiles][kMats];
#pragma unroll
  for (int i = 0; i < kTiles; ++i) {
    int row = row0 + i * 8 + g;
    if (row >= total_rows) row = 0;
    const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);
#pragma unroll
    for (int m = 0; m < kMats; ++m)
      wrow[i][m] = gemv_pick(qp.w, EPILOGUE == kGemvGateUp ? m : seg) + static_cast<long long>(row) * ROW_BYTES;
  }

  // f32 sums of this lane's output rows 2t, 2t+1 of each tile, over the chunks g of every slab.
  float acc[kTiles][kMats][2];
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int m = 0; m < kMats; ++m) acc[i][m][0] = acc[i][m][1] = 0.f;

  // K range of this split, in whole slabs; the lane's chunk is t of each slab. Chunks at or past
  // k_end (the last slab of a K that is not a multiple of 128, or a batch past the split's end)
  // are not loaded: their lanes supply zero x, so their B values (finite: n − z of n = 0) add nothing.
  const int slabs = (K + kSlab - 1) / kSlab;
  const int slabs_per_split = (slabs + SPLIT - 1) / SPLIT;
  const int k_begin = split * slabs_per_split * kSlab;
  const int k_end = min(K, k_begin + slabs_per_split * kSlab);
  const int batches = k_end > k_begin ? (k_end - k_begin + UNROLL * kSlab - 1) / (UNROLL * kSlab) : 0;
  constexpr int kBatch = UNROLL * kSlab;
  int k = k_begin + t * kChunk;

  // A chunk's bytes start at qbytes(k); its group's scale (and zero point) follow the row's elements.
  // Batches are loaded in order, so the rows' pointers step to the next batch after each (loop-carried:
  // nothing is recomputed from the parameters), and a slab's scale and zero point are 32-bit offsets
  // from them, shared by the tiles and matrices. `checked`: the batch reaches past k_end, so each
  // chunk is loaded only if it lies before it.
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int m = 0; m < kMats; ++m) wrow[i][m] += qbytes(k);
  auto load_batch = [&](QMmaLoad (&dst)[UNROLL][kTiles][kMats], int at) {
    const bool checked = at - t * kChunk + kBatch > k_end;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const unsigned int at_u = static_cast<unsigned int>(at + u * kSlab);
      const unsigned int group = at_u / G;
      const unsigned int here = qbytes(at);  // the rows' pointers are this many bytes into them
      const unsigned int s_off = qbytes(K) + group * 2 - here;
      const unsigned int z_off = K / 2 + (K / G) * 2 + group - here;
      const unsigned int m_off = K / 2 + (K / G) * 2 + group * 2 - here;  // offsets
      const bool load = !checked || static_cast<int>(at_u) < k_end;
#pragma unroll
      for (int i = 0; i < kTiles; ++i)
#pragma unroll
        for (int m = 0; m < kMats; ++m) {
          QMmaLoad l{make_uint4(0u, 0u, 0u, 0u), 0u, 8u};
          if (load) {
            l.q = load_stream16(wrow[i][m] + qbytes(u * kSlab));
            if constexpr (FORMAT != kQInt8) l.scale = qgemv_scale_bits(wrow[i][m] + s_off);
            if constexpr (FORMAT == kQInt4Zp) l.zero = wrow[i][m][z_off];
            if constexpr (FORMAT == kQInt4Offset) l.zero = qgemv_scale_bits(wrow[i][m] + m_off);  // the offset's bits
          }
          dst[u][i][m] = l;
        }
    }
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int m = 0; m < kMats; ++m) wrow[i][m] += qbytes(kBatch);
  };
  // Two batches' registers, used in turn (no copies between them).
  QMmaLoad even[UNROLL][kTiles][kMats], odd[UNROLL][kTiles][kMats];
  if (batches > 0) load_batch(even, k);
  GemvNormWeights<W, THREADS, KMAX> norm_weights, post_weights;
  if (PROLOGUE != kGemvNoNorm) load_norm_weights(p.norm_w, K, norm_weights);
  if (PROLOGUE == kGemvResidualNorm) load_norm_weights(p.post_w, K, post_weights);

  // The lanes 0..3 write rows 2t, 2t+1 of each tile; their biases (and int8 per channel's row scales)
  // are weights too: loaded before the wait.
  float bias_v[kTiles][kMats][2], row_scale[kTiles][kMats][2];
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        bias_v[i][m][j] = 0.f;
        row_scale[i][m][j] = 1.f;
        int row = row0 + i * 8 + 2 * t + j;
        if (g != 0 || row >= total_rows) continue;
        const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);  // row: within its segment
        const int mat = EPILOGUE == kGemvGateUp ? m : seg;
        const T* bias = gemv_pick(p.bias, mat);
        if (bias) bias_v[i][m][j] = to_float(bias[row]);
        if constexpr (FORMAT == kQInt8)
          row_scale[i][m][j] = qgemv_scale_value<S>(qgemv_scale_bits(gemv_pick(qp.w, mat) + static_cast<long long>(row) * ROW_BYTES + K));
      }

  launch_dependent_grids();
  wait_for_producer_grid();

  float residual_v[kTiles][2];
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int row = row0 + i * 8 + 2 * t + j;
      residual_v[i][j] = EPILOGUE == kGemvResidual && g == 0 && row < total_rows ? to_float(p.residual[row]) : 0.f;
    }

  // The second batch goes out before x is staged, so the weights keep streaming through the staging.
  if (batches > 1) load_batch(odd, k + kBatch);

  T* zeros = xs + kZeros;
  gemv_stage_x<T, OutT, W, THREADS, KMAX, PROLOGUE>(p, norm_weights, post_weights, xs);
  qmma_permute_x<T, THREADS, FORMAT>(xs, K, zeros);
  if constexpr (FORMAT == kQInt4Offset) {
    for (int c = threadIdx.x; c < kChunkSums; c += THREADS) chunk_sum[c] = 32 * c < K ? qgemv_x_sum<T>(xs + 32 * c) : 0.f;
    __syncthreads();
  }

  // One chunk per (slab, tile, matrix): eight mmas into two fresh fragments, whose rows g and g+8
  // (lanes g < 4: chunk g's partial for rows 2t, 2t+1) are scaled by chunk g's group scale of those
  // rows, held by the lanes 4·2t + g and 4·(2t+1) + g that loaded them.
  const bool supplies_x = g == t;
  auto accumulate = [&](const QMmaLoad (&l)[UNROLL][kTiles][kMats], int at0) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int at = at0 + u * kSlab;
      const T* x = supplies_x && at < k_end ? xs + at : zeros;
#pragma unroll
      for (int i = 0; i < kTiles; ++i)
#pragma unroll
        for (int m = 0; m < kMats; ++m) {
          float d04[4] = {0.f, 0.f, 0.f, 0.f}, d15[4] = {0.f, 0.f, 0.f, 0.f};
          if constexpr (kInt8) {
            qmma_chunk_i8<T>(d04, d15, l[u][i][m].q, x);
          } else {
            qmma_chunk<T>(d04, d15, l[u][i][m].q, x, qmma_zero(FORMAT == kQInt4Zp ? l[u][i][m].zero : FORMAT == kQInt4Offset ? 0u : 8u));
          }
          if constexpr (FORMAT == kQInt8) {  // per channel: unscaled partials; the row's scale at the end
            acc[i][m][0] += d04[0] + d15[2];
            acc[i][m][1] += d04[1] + d15[3];
            continue;
          }
          const float scale = qgemv_scale_value<S>(static_cast<unsigned short>(l[u][i][m].scale));  // converted once, then shared
          const float s0 = __shfl_sync(0xffffffffu, scale, 8 * t + g);
          const float s1 = __shfl_sync(0xffffffffu, scale, 8 * t + 4 + g);
          if constexpr (FORMAT == kQInt4Offset) {
            // x = s·n + m: the mma summed n·x; m times the chunk's Σx is added per row.
            const float offset = qgemv_scale_value<S>(static_cast<unsigned short>(l[u][i][m].zero));
            const float m0 = __shfl_sync(0xffffffffu, offset, 8 * t + g);
            const float m1 = __shfl_sync(0xffffffffu, offset, 8 * t + 4 + g);
            const float x_sum = chunk_sum[(at - 32 * t) / 32 + g];
            acc[i][m][0] = fmaf(m0, x_sum, acc[i][m][0]);
            acc[i][m][1] = fmaf(m1, x_sum, acc[i][m][1]);
          }
          acc[i][m][0] = fmaf(s0, d04[0] + d15[2], acc[i][m][0]);
          acc[i][m][1] = fmaf(s1, d04[1] + d15[3], acc[i][m][1]);
        }
    }
  };
  for (int b = 0; b < batches; b += 2) {
    accumulate(even, k);
    if (b + 2 < batches) load_batch(even, k + 2 * kBatch);
    if (b + 1 == batches) break;
    accumulate(odd, k + kBatch);
    if (b + 3 < batches) load_batch(odd, k + 3 * kBatch);
    k += 2 * kBatch;
  }

  // The four chunks' partials (lanes g = 0..3 of each t) meet in the lanes 0..3; the lanes 16..31
  // hold A's zero rows 4..7.
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float v = acc[i][m][j];
        v += __shfl_xor_sync(0xffffffffu, v, 4);
        v += __shfl_xor_sync(0xffffffffu, v, 8);
        acc[i][m][j] = v;
      }

  if (SPLIT > 1) {
    if (g == 0)
#pragma unroll
      for (int i = 0; i < kTiles; ++i)
#pragma unroll
        for (int m = 0; m < kMats; ++m)
#pragma unroll
          for (int j = 0; j < 2; ++j) partial[(warp * ROWS + i * 8 + 2 * t + j) * kMats + m] = acc[i][m][j];
    __syncthreads();
    if (split != 0) return;
#pragma unroll
    for (int i = 0; i < kTiles; ++i)
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          float sum = 0.f;
#pragma unroll
          for (int s = 0; s < SPLIT; ++s) sum += partial[((s * kRowWarps + row_warp) * ROWS + i * 8 + 2 * t + j) * kMats + m];
          acc[i][m][j] = sum;
        }
  }

  if (g != 0) return;
  // The row's product (times its scale, int8 per channel; 1 otherwise) plus its bias.
  auto product = [&](int i, int m, int j) { return acc[i][m][j] * row_scale[i][m][j] + bias_v[i][m][j]; };
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      int row = row0 + i * 8 + 2 * t + j;
      if (row >= total_rows) continue;
      if (EPILOGUE == kGemvGateUp) {
        p.y[0][row] = from_float<OutT>(gate_activation<ACT>(product(i, 0, j)) * product(i, kMats - 1, j));
        continue;
      }
      float v = product(i, 0, j);
      if (EPILOGUE == kGemvResidual) v += residual_v[i][j];
      const int seg = gemv_segment(p.rows, row);  // row: within its segment
      gemv_pick(p.y, seg)[row] = from_float<OutT>(v);
    }
}

}  // namespace ac
