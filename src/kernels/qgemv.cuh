// Quantized GEMV family: y[t, n] = epilogue(sum_k W[n, k] * x[t, k]) with W in a row format of
// ir/quant.h (int8 per output channel, or int4 in groups of G along K with f16/bf16 scales and
// optional zero points), dequantized in registers: the weight bytes are read once per token at their
// own size, 16 bytes (16 int8 or 32 int4 elements) per lane and load.
//
// Layout (ir/quant.h, dequant.cuh): row n starts at n * ROW_BYTES (a multiple of 16, so every 16-byte
// load is aligned); the format codes and scale loads are dequant.cuh's.
// Arithmetic: int4 sums (n − z)·x over the 32 elements of a load in f32 and adds s_g times that sum
// (a load never straddles a group: G is a multiple of 32); int8 per channel sums q·x over the row and
// multiplies by s once at the end, int8 in groups adds s_g times each load's sum; int4 with offsets
// (x = s·n + m) adds s_g·Σn·x + m_g·Σx, Σx the load's 32 values of x summed once for all its rows. All
// differ from the reference's (s·q)·x only in f32 rounding.
//
// One token per blockIdx.y (decode launches one; a prefill launches T, re-reading the weights per
// token: the fallback until a dequantizing GEMM exists). Everything else is the f16 GEMV's
// (gemv.cuh): ROWS rows per warp, UNROLL loads in flight per row, SPLIT warps over K, the same
// epilogues (plain with bias, residual add, gate/up act·mul, fused multi-segment rows) and the same
// RMSNorm / residual-norm prologues while x is staged in shared memory (one token), the first batch
// of weight loads issued before the programmatic-dependent-launch wait.
#pragma once

#include "activation.cuh"
#include "common.cuh"
#include "dequant.cuh"
#include "gemv.cuh"

namespace ac {

template <typename T, typename OutT, typename W = T>
struct QGemvParams {
  GemvParams<T, OutT, W> g;   // x, prologue, residual, biases, outputs, rows and K of token 0 (g.w unused)
  const unsigned char* w[3];  // the segments' quantized rows
  int x_stride;               // elements between tokens' rows of x and of the residual: K and N
  int residual_stride;
};

// The dot product of one 16-byte chunk of quantized elements with 16 or 32 consecutive x values
// (from shared memory), without the scale: sum q·x (int8; `zero` unused) or sum (n − z)·x (int4).
// Integers become floats without the conversion unit: 2^23 + u has u in its low mantissa bits, so
// or-ing u (0..255) into the bits of 2^23 and subtracting 2^23 + offset gives u − offset exactly, in
// one logic op and one add. int→float conversions (I2F) run at a quarter of the FMA rate, and with 32
// of them per 16-byte load they, not the memory, bounded the int4 GEMV (~0.7-1.1 TB/s on an H200).
__device__ __forceinline__ float qgemv_small_uint(unsigned int u, float offset_plus_2p23) {
  return __uint_as_float(0x4B000000u | u) - offset_plus_2p23;
}

template <typename T, int FORMAT>
__device__ __forceinline__ float qgemv_chunk_dot(uint4 q, const T* x, float zero) {
  const unsigned int words[4] = {q.x, q.y, q.z, q.w};
  float sum = 0.f;
  if constexpr (kQInt8Bytes<FORMAT>) {
    // A signed byte b, its sign bit flipped, is b + 128 as an unsigned byte.
    constexpr float kOffset = 8388608.f + 128.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float xf[8];
      unpack8<T>(*reinterpret_cast<const uint4*>(x + h * 8), xf);
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int b = h * 8 + e;
        const float v = qgemv_small_uint(((words[b / 4] >> (8 * (b % 4))) & 0xffu) ^ 0x80u, kOffset);
        sum = fmaf(v, xf[e], sum);
      }
    }
  } else {
    const float offset = 8388608.f + zero;  // zero is a whole number in [0, 15]: exact
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      float xf[8];
      unpack8<T>(*reinterpret_cast<const uint4*>(x + h * 8), xf);
      const unsigned int word = words[h];  // 4 bytes: elements 8h .. 8h+7, low nibble first
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float v = qgemv_small_uint((word >> (4 * e)) & 0xfu, offset);
        sum = fmaf(v, xf[e], sum);
      }
    }
  }
  return sum;
}

// The sum of the 32 values of x at `x` (shared memory), for the offset format's m·Σx.
template <typename T>
__device__ __forceinline__ float qgemv_x_sum(const T* x) {
  float sum = 0.f;
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    float xf[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(x + h * 8), xf);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += xf[e];
  }
  return sum;
}

// One lane's 16-byte chunk of a row, with its group's scale and zero point or offset (int4) as loaded.
struct QGemvLoad {
  uint4 q;
  unsigned short scale;
  unsigned char zero;
  unsigned short offset;
};

template <typename T, typename OutT, typename S, int FORMAT, int G, int ROW_BYTES, int THREADS, int ROWS, int UNROLL, int SPLIT,
          int EPILOGUE, int KMAX, int PROLOGUE = kGemvNoNorm, int ACT = kActSilu, typename W = T>
__device__ __forceinline__ void qgemv(const QGemvParams<T, OutT, W>& qp) {
  constexpr int kElems = QGemvChunk<FORMAT>::kElems;
  constexpr int kWarps = THREADS / 32;
  constexpr int kRowWarps = kWarps / SPLIT;
  constexpr int kMats = EPILOGUE == kGemvGateUp ? 2 : 1;
  constexpr int kBytesPerElemX2 = kQInt8Bytes<FORMAT> ? 2 : 1;  // quantized bytes per element, times two
  __shared__ __align__(16) T xs[KMAX];
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
  const int row_warp = warp % kRowWarps, split = warp / kRowWarps;
  const int total_rows = p.rows[0] + p.rows[1] + p.rows[2];
  const int row0 = (blockIdx.x * kRowWarps + row_warp) * ROWS;

  const unsigned char* wrow[ROWS][kMats];
  bool valid[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    int row = row0 + r;
    valid[r] = row < total_rows;
    if (!valid[r]) row = 0;
    const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);
#pragma unroll
    for (int m = 0; m < kMats; ++m)
      wrow[r][m] = gemv_pick(qp.w, EPILOGUE == kGemvGateUp ? m : seg) + static_cast<long long>(row) * ROW_BYTES;
  }

  float acc[ROWS][kMats];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < kMats; ++m) acc[r][m] = 0.f;

  // K range of this split, in whole chunks; every lane steps by 32 chunks.
  const int chunks = K / kElems;
  const int c_per_split = (chunks + SPLIT - 1) / SPLIT;
  const int k_begin = split * c_per_split * kElems;
  const int k_end = min(K, k_begin + c_per_split * kElems);
  constexpr int kStep = 32 * kElems;
  int k = k_begin + lane * kElems;

  // A chunk's bytes start at k * bytes-per-element; its group's scale (and zero point) follow the
  // row's quantized bytes (int4). Loaded together, used after the whole batch is in flight.
  auto load_chunk = [&](const unsigned char* row, int at) {
    QGemvLoad l;
    l.q = load_stream16(row + at * kBytesPerElemX2 / 2);
    l.scale = 0;
    l.zero = FORMAT == kQInt4Offset ? 0 : 8;
    l.offset = 0;
    if constexpr (FORMAT == kQInt8Group) l.scale = qgemv_scale_bits(row + K + (at / G) * 2);
    if constexpr (!kQInt8Bytes<FORMAT>) l.scale = qgemv_scale_bits(row + K / 2 + (at / G) * 2);
    if constexpr (FORMAT == kQInt4Zp) l.zero = row[K / 2 + (K / G) * 2 + at / G];
    if constexpr (FORMAT == kQInt4Offset) l.offset = qgemv_scale_bits(row + K / 2 + (K / G) * 2 + (at / G) * 2);
    return l;
  };

  QGemvLoad cur[UNROLL][ROWS][kMats];
  auto batch_fits = [&](int at) { return at + (UNROLL - 1) * kStep < k_end; };
  auto load_batch = [&](QGemvLoad (&dst)[UNROLL][ROWS][kMats], int at) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < kMats; ++m) dst[u][r][m] = load_chunk(wrow[r][m], at + u * kStep);
  };
  bool have = batch_fits(k);
  if (have) load_batch(cur, k);
  GemvNormWeights<W, THREADS, KMAX> norm_weights, post_weights;
  if (PROLOGUE != kGemvNoNorm) load_norm_weights(p.norm_w, K, norm_weights);
  if (PROLOGUE == kGemvResidualNorm) load_norm_weights(p.post_w, K, post_weights);

  // Biases and int8's row scales are weights too: loaded before the producer wait.
  float bias_v[ROWS][kMats], row_scale[ROWS][kMats];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < kMats; ++m) {
      bias_v[r][m] = 0.f;
      row_scale[r][m] = FORMAT == kQInt8 ? qgemv_scale_value<S>(qgemv_scale_bits(wrow[r][m] + K)) : 1.f;
    }
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (!valid[r]) continue;
      int row = row0 + r;
      const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        const T* bias = gemv_pick(p.bias, EPILOGUE == kGemvGateUp ? m : seg);
        if (bias) bias_v[r][m] = to_float(bias[row]);
      }
    }
  }

  launch_dependent_grids();
  wait_for_producer_grid();

  float residual_v[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    residual_v[r] = EPILOGUE == kGemvResidual && lane == 0 && valid[r] ? to_float(p.residual[row0 + r]) : 0.f;

  int next = k + UNROLL * kStep;
  bool have_next = have && batch_fits(next);
  QGemvLoad nxt[UNROLL][ROWS][kMats];
  if (have_next) load_batch(nxt, next);

  gemv_stage_x<T, OutT, W, THREADS, KMAX, PROLOGUE>(p, norm_weights, post_weights, xs);

  // acc += (scale of the chunk's group) * dot(chunk, x) (+ offset * Σx); int8 per channel's scale comes at the end.
  auto accumulate = [&](const QGemvLoad (&l)[ROWS][kMats], int at) {
    const float x_sum = FORMAT == kQInt4Offset ? qgemv_x_sum<T>(xs + at) : 0.f;
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        const float dot = qgemv_chunk_dot<T, FORMAT>(l[r][m].q, xs + at, qgemv_small_uint(l[r][m].zero, 8388608.f));
        if constexpr (FORMAT == kQInt8) acc[r][m] += dot;
        else if constexpr (FORMAT == kQInt4Offset)
          acc[r][m] = fmaf(qgemv_scale_value<S>(l[r][m].scale), dot, fmaf(qgemv_scale_value<S>(l[r][m].offset), x_sum, acc[r][m]));
        else acc[r][m] = fmaf(qgemv_scale_value<S>(l[r][m].scale), dot, acc[r][m]);
      }
  };
  while (have) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) accumulate(cur[u], k + u * kStep);
    k = next;
    have = have_next;
    if (!have) break;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < kMats; ++m) cur[u][r][m] = nxt[u][r][m];
    next = k + UNROLL * kStep;
    have_next = batch_fits(next);
    if (have_next) load_batch(nxt, next);
  }
  for (; k < k_end; k += kStep) {  // remainder steps
    QGemvLoad l[ROWS][kMats];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int m = 0; m < kMats; ++m) l[r][m] = load_chunk(wrow[r][m], k);
    accumulate(l, k);
  }

#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < kMats; ++m) acc[r][m] = warp_sum(acc[r][m]) * row_scale[r][m];

  if (SPLIT > 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < kMats; ++m) partial[(warp * ROWS + r) * kMats + m] = acc[r][m];
    __syncthreads();
    if (split != 0) return;
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        float sum = 0.f;
#pragma unroll
        for (int s = 0; s < SPLIT; ++s) sum += partial[((s * kRowWarps + row_warp) * ROWS + r) * kMats + m];
        acc[r][m] = sum;
      }
  }

  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (!valid[r]) continue;
    int row = row0 + r;
    if (EPILOGUE == kGemvGateUp) {
      const float gate = acc[r][0] + bias_v[r][0];
      const float up = acc[r][kMats - 1] + bias_v[r][kMats - 1];
      p.y[0][row] = from_float<OutT>(gate_activation<ACT>(gate) * up);
      continue;
    }
    const int seg = gemv_segment(p.rows, row);
    float v = acc[r][0] + bias_v[r][0];
    if (EPILOGUE == kGemvResidual) v += residual_v[r];
    gemv_pick(p.y, seg)[row] = from_float<OutT>(v);
  }
}

}  // namespace ac
