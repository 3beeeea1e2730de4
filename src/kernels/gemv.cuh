// Decode GEMV family: y[n] = epilogue(sum_k W[n, k] * x[k]) for one token, streaming W once.
//
// Bytes: the weights (N*K*2) dominate, so the kernel is built to keep many 16-byte weight loads in
// flight: each warp owns ROWS rows, each lane reads VEC=8 consecutive elements per step and the
// K loop is unrolled UNROLL steps deep; x is staged once per block in shared memory. With SPLIT > 1
// the K range is split across SPLIT warps of the block and combined through shared memory (for
// few rows and long K, e.g. down_proj N=2048, K=6144).
// The first batch of weight loads (and the norm weights and biases) is issued before the programmatic-
// dependent-launch wait (the template places its own wait), so it overlaps the kernel before it; the
// residual row and the second batch right after the wait, before x is staged. The kernel lets the next
// one launch before its own wait, so that one's weight loads start as early as SM room allows
// (Qwen3-1.7B decode on an H200: 1.069 -> 1.056 ms/token).
// Epilogues: plain (optionally + bias), residual add, gate/up act·mul (two weight matrices read
// together; act SiLU or GELU, activation.cuh), multi-segment rows (fused QKV: up to 3
// weights/biases/outputs addressed as one N).
// Prologue (kGemvNorm): x is the input of an RMSNorm that the block applies while staging it, in the
// unfused kernel's arithmetic (fp32 sum of squares, norm_w * (x * rsqrt(mean + eps)), rounded to T),
// so the normalized row never goes through memory and its kernel launch disappears. The norm weights
// are T or f32 (W: Gemma's 1 + w). The residual-norm prologue (kGemvResidualNorm, Gemma's sandwich
// norms) comes first: every block computes h = skip + post_w * rmsnorm(x) (rounded to T, as the
// unfused region stores it; K is small, so the redundant row work is a few KB from L2 per block),
// block 0 writes h for the next residual add, and the RMSNorm prologue normalizes h.
#pragma once

#include "activation.cuh"
#include "common.cuh"

namespace ac {

enum GemvEpilogue { kGemvPlain = 0, kGemvResidual = 1, kGemvGateUp = 2 };

template <typename T, typename OutT, typename W = T>
struct GemvParams {
  const T* x;              // [K]
  const W* norm_w;         // [K] RMSNorm weight when the prologue is on
  float norm_eps;
  const T* skip;           // [K] the residual-norm prologue's residual stream: x is then its post-norm's input
  const W* post_w;         // [K] the post-norm's weight
  float post_eps;
  T* h;                    // [K] skip + post-norm(x), written by block 0; may be null
  const T* residual;       // [N] for kGemvResidual
  const T* w[3];           // segment weights [N_s, K]; for kGemvGateUp: w[0] gate, w[1] up
  const T* bias[3];        // per segment, may be null
  OutT* y[3];              // per segment outputs
  int rows[3];             // rows per segment (segments 1, 2 may have 0 rows)
  int K;
};

// One of a segment array by a runtime index, as selects: indexing the params struct's arrays with a
// runtime value would copy it to local memory.
template <typename P>
__device__ __forceinline__ P gemv_pick(P const (&items)[3], int i) {
  return i == 0 ? items[0] : i == 1 ? items[1] : items[2];
}

// The segment of a row of the concatenated outputs (fused QKV: q, k, v), and `row` made the row
// within it.
__device__ __forceinline__ int gemv_segment(const int (&rows)[3], int& row) {
  if (row < rows[0]) return 0;
  row -= rows[0];
  if (row < rows[1]) return 1;
  row -= rows[1];
  return 2;
}

// The norm weights of a prologue, loaded before the producer wait (load_norm_weights): 8 of them per
// chunk of x, in one 16-byte piece of T or two of f32.
template <typename W, int THREADS, int KMAX>
struct GemvNormWeights {
  static constexpr int kChunks = (KMAX + THREADS * 8 - 1) / (THREADS * 8);  // chunks of 8 elements per thread
  static constexpr int kPieces = sizeof(W) == 4 ? 2 : 1;                      // 16-byte pieces per chunk
  uint4 w[kChunks][kPieces];

  __device__ __forceinline__ void unpack(int c, float (&out)[8]) const {
    if constexpr (kPieces == 2) {
      const float* f = reinterpret_cast<const float*>(w[c]);
#pragma unroll
      for (int e = 0; e < 8; ++e) out[e] = f[e];
    } else {
      unpack8<W>(w[c][0], out);
    }
  }
};

template <typename W, int THREADS, int KMAX>
__device__ __forceinline__ void load_norm_weights(const W* w, int K, GemvNormWeights<W, THREADS, KMAX>& nw) {
  using Weights = GemvNormWeights<W, THREADS, KMAX>;
#pragma unroll
  for (int c = 0; c < Weights::kChunks; ++c) {
    const int i = (c * THREADS + threadIdx.x) * 8;
    if (i < K)
#pragma unroll
      for (int piece = 0; piece < Weights::kPieces; ++piece) nw.w[c][piece] = load16(w + i + piece * 4);
  }
}

// The rows a prologue normalizes, in each thread's 16-byte chunks of 8 elements (chunk c of thread t
// holds elements (c * THREADS + t) * 8 ..), kept in registers between a norm's two passes.
template <typename T, int THREADS, int KMAX>
struct GemvRowChunks {
  static constexpr int kChunks = (KMAX + THREADS * 8 - 1) / (THREADS * 8);
  uint4 raw[kChunks];

  __device__ __forceinline__ void load(const T* row, int K) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int i = (c * THREADS + threadIdx.x) * 8;
      if (i < K) raw[c] = load16(row + i);
    }
  }
  // 1 / rms of the row, in fp32 over the block (the unfused norm's arithmetic); ends with a barrier.
  __device__ __forceinline__ float inv_rms(int K, float eps, float* scratch) const {
    float squares = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      if ((c * THREADS + threadIdx.x) * 8 >= K) continue;
      float xf[8];
      unpack8<T>(raw[c], xf);
#pragma unroll
      for (int e = 0; e < 8; ++e) squares = fmaf(xf[e], xf[e], squares);
    }
    return rsqrtf(block_sum<THREADS>(squares, scratch) / static_cast<float>(K) + eps);
  }
};

// RMSNorm of the chunks, w * (x * inv_rms) rounded to T, written to `out` (shared or global memory).
template <typename T, typename W, int THREADS, int KMAX>
__device__ __forceinline__ void gemv_normalize(const GemvRowChunks<T, THREADS, KMAX>& x, const GemvNormWeights<W, THREADS, KMAX>& nw,
                                               int K, float eps, float* scratch, T* out) {
  const float inv_rms = x.inv_rms(K, eps, scratch);
#pragma unroll
  for (int c = 0; c < GemvRowChunks<T, THREADS, KMAX>::kChunks; ++c) {
    const int i = (c * THREADS + threadIdx.x) * 8;
    if (i >= K) continue;
    float xf[8], wf[8];
    unpack8<T>(x.raw[c], xf);
    nw.unpack(c, wf);
    alignas(16) T y[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) y[e] = from_float<T>(wf[e] * (xf[e] * inv_rms));
    *reinterpret_cast<uint4*>(&out[i]) = *reinterpret_cast<const uint4*>(y);
  }
}

// The residual-norm prologue's first half: h = skip + post_w * (x * inv_rms(x)) in fp32, rounded to T
// as the unfused post-norm region stores it; the chunks of x become h's. A non-null `h` (block 0's)
// receives the row for the next residual add.
template <typename T, typename W, int THREADS, int KMAX>
__device__ __forceinline__ void gemv_residual_norm(GemvRowChunks<T, THREADS, KMAX>& x, const GemvRowChunks<T, THREADS, KMAX>& skip,
                                                   const GemvNormWeights<W, THREADS, KMAX>& post_w, int K, float eps, float* scratch,
                                                   T* h) {
  const float inv_rms = x.inv_rms(K, eps, scratch);
#pragma unroll
  for (int c = 0; c < GemvRowChunks<T, THREADS, KMAX>::kChunks; ++c) {
    const int i = (c * THREADS + threadIdx.x) * 8;
    if (i >= K) continue;
    float xf[8], sf[8], wf[8];
    unpack8<T>(x.raw[c], xf);
    unpack8<T>(skip.raw[c], sf);
    post_w.unpack(c, wf);
    alignas(16) T sum[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) sum[e] = from_float<T>(sf[e] + wf[e] * (xf[e] * inv_rms));
    x.raw[c] = *reinterpret_cast<const uint4*>(sum);
    if (h) *reinterpret_cast<uint4*>(&h[i]) = x.raw[c];
  }
}

// The add-only prologue's first half: h = skip + x in fp32, rounded to T as the unfused add stores it;
// the chunks of x become h's, and a non-null `h` (block 0's) receives the row for the next residual add.
template <typename T, int THREADS, int KMAX>
__device__ __forceinline__ void gemv_add_rows(GemvRowChunks<T, THREADS, KMAX>& x, const GemvRowChunks<T, THREADS, KMAX>& skip, int K, T* h) {
#pragma unroll
  for (int c = 0; c < GemvRowChunks<T, THREADS, KMAX>::kChunks; ++c) {
    const int i = (c * THREADS + threadIdx.x) * 8;
    if (i >= K) continue;
    float xf[8], sf[8];
    unpack8<T>(x.raw[c], xf);
    unpack8<T>(skip.raw[c], sf);
    alignas(16) T sum[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) sum[e] = from_float<T>(xf[e] + sf[e]);
    x.raw[c] = *reinterpret_cast<const uint4*>(sum);
    if (h) *reinterpret_cast<uint4*>(&h[i]) = x.raw[c];
  }
}

// Stages x into shared memory: as it is, RMSNorm(x) (kGemvNorm), or RMSNorm(h) of the residual-norm
// prologue (kGemvResidualNorm or kGemvAddNorm, block 0 writing h). Each thread keeps its chunks of the rows in
// registers between the passes (only the block sums need barriers); the norm weights were loaded
// before the producer wait. Ends with the block's barrier.
// kGemvAddNorm: the residual-norm prologue without its post-norm, h = skip + x (a tensor-parallel rank's
// all-reduced row and the residual stream), block 0 writing h, then RMSNorm(h).
enum GemvPrologue { kGemvNoNorm = 0, kGemvNorm = 1, kGemvResidualNorm = 2, kGemvAddNorm = 3 };

template <typename T, typename OutT, typename W, int THREADS, int KMAX, int PROLOGUE>
__device__ __forceinline__ void gemv_stage_x(const GemvParams<T, OutT, W>& p, const GemvNormWeights<W, THREADS, KMAX>& norm_w,
                                             const GemvNormWeights<W, THREADS, KMAX>& post_w, T* xs) {
  const int K = p.K;
  if (PROLOGUE == kGemvNoNorm) {
    for (int i = threadIdx.x * 8; i < K; i += THREADS * 8) *reinterpret_cast<uint4*>(&xs[i]) = load16(p.x + i);
    __syncthreads();
    return;
  }
  __shared__ float scratch[THREADS / 32];
  GemvRowChunks<T, THREADS, KMAX> x;
  x.load(p.x, K);
  if (PROLOGUE == kGemvResidualNorm) {
    GemvRowChunks<T, THREADS, KMAX> skip;
    skip.load(p.skip, K);
    gemv_residual_norm(x, skip, post_w, K, p.post_eps, scratch, blockIdx.x == 0 ? p.h : nullptr);
  }
  if (PROLOGUE == kGemvAddNorm) {
    GemvRowChunks<T, THREADS, KMAX> skip;
    skip.load(p.skip, K);
    gemv_add_rows(x, skip, K, blockIdx.x == 0 ? p.h : nullptr);
  }
  gemv_normalize(x, norm_w, K, p.norm_eps, scratch, xs);
  __syncthreads();
}

// The residual-norm prologue alone, for the cuBLAS fallback: one block per row of x, h and the
// normalized row y ([rows, K] each), the GEMV prologue's arithmetic.
template <typename T, typename W = T>
struct ResidualNormParams {
  const T* x;       // [rows, K] the post-norm's input
  const T* skip;    // [rows, K] the residual stream
  const W* post_w;  // [K]; null: h = skip + x (the add-only prologue)
  const W* norm_w;  // [K]
  T* h;             // [rows, K] skip + post-norm(x), may be null
  T* y;             // [rows, K] RMSNorm(h)
  float post_eps, norm_eps;
  int K;
};

template <typename T, typename W, int THREADS, int KMAX>
__device__ __forceinline__ void residual_norm_rows(const ResidualNormParams<T, W>& p) {
  __shared__ float scratch[THREADS / 32];
  const long long offset = static_cast<long long>(blockIdx.x) * p.K;
  GemvNormWeights<W, THREADS, KMAX> post_w, norm_w;
  if (p.post_w) load_norm_weights(p.post_w, p.K, post_w);
  load_norm_weights(p.norm_w, p.K, norm_w);
  GemvRowChunks<T, THREADS, KMAX> x, skip;
  x.load(p.x + offset, p.K);
  skip.load(p.skip + offset, p.K);
  if (p.post_w) {
    gemv_residual_norm(x, skip, post_w, p.K, p.post_eps, scratch, p.h ? p.h + offset : nullptr);
  } else {
    gemv_add_rows(x, skip, p.K, p.h ? p.h + offset : nullptr);
  }
  gemv_normalize(x, norm_w, p.K, p.norm_eps, scratch, p.y + offset);
}

template <typename T, typename OutT, int THREADS, int ROWS, int UNROLL, int SPLIT, int EPILOGUE, int KMAX, int PROLOGUE = kGemvNoNorm,
          int ACT = kActSilu, typename W = T>
__device__ __forceinline__ void gemv(const GemvParams<T, OutT, W>& p) {
  constexpr int kVec = 8;
  constexpr int kWarps = THREADS / 32;
  constexpr int kRowWarps = kWarps / SPLIT;       // warps that own distinct rows
  constexpr int kMats = EPILOGUE == kGemvGateUp ? 2 : 1;
  __shared__ __align__(16) T xs[KMAX];
  __shared__ float partial[SPLIT > 1 ? kWarps * ROWS * kMats : 1];

  const int K = p.K;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row_warp = warp % kRowWarps, split = warp / kRowWarps;
  const int total_rows = p.rows[0] + p.rows[1] + p.rows[2];
  const int row0 = (blockIdx.x * kRowWarps + row_warp) * ROWS;

  // Which segment and local row each of this warp's rows falls in.
  const T* wrow[ROWS][kMats];
  bool valid[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    int row = row0 + r;
    valid[r] = row < total_rows;
    if (!valid[r]) row = 0;
    const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);
#pragma unroll
    for (int m = 0; m < kMats; ++m) wrow[r][m] = gemv_pick(p.w, EPILOGUE == kGemvGateUp ? m : seg) + static_cast<size_t>(row) * K;
  }

  float acc[ROWS][kMats];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < kMats; ++m) acc[r][m] = 0.f;

  // K range of this split; every lane steps by 32*kVec elements.
  const int k_chunk = (K + SPLIT - 1) / SPLIT;
  const int k_begin = split * k_chunk;
  const int k_end = min(K, k_begin + k_chunk);
  constexpr int kStep = 32 * kVec;
  int k = k_begin + lane * kVec;

  // Software pipeline: the next batch of weight lines is in flight while this one is multiplied,
  // and the first batch is issued before x is staged, so the block's start overlaps its loads.
  uint4 cur[UNROLL][ROWS][kMats];
  auto batch_fits = [&](int at) { return at + (UNROLL - 1) * kStep < k_end; };
  auto load_batch = [&](uint4 (&dst)[UNROLL][ROWS][kMats], int at) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < kMats; ++m) dst[u][r][m] = load_stream16(wrow[r][m] + at + u * kStep);
  };
  bool have = batch_fits(k);
  if (have) load_batch(cur, k);
  GemvNormWeights<W, THREADS, KMAX> norm_weights, post_weights;
  if (PROLOGUE != kGemvNoNorm) load_norm_weights(p.norm_w, K, norm_weights);
  if (PROLOGUE == kGemvResidualNorm) load_norm_weights(p.post_w, K, post_weights);

  // The epilogue's biases are weights too: loaded here, not after the reduction.
  float bias_v[ROWS][kMats];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < kMats; ++m) bias_v[r][m] = 0.f;
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

  // Everything above reads only weights, so under programmatic dependent launch it overlaps the
  // producer kernel; x (and the residual) are read only after the producer grid has finished.
  // The next kernel may launch now: its blocks take the SM room this grid leaves and issue their own
  // weight loads, so the stream of weights does not stop at this kernel's end.
  launch_dependent_grids();
  wait_for_producer_grid();

  // The residual row is the producer's input, long written: its load goes out now, so its latency
  // hides behind the dot products instead of adding to the kernel's tail.
  float residual_v[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    residual_v[r] = EPILOGUE == kGemvResidual && lane == 0 && valid[r] ? to_float(p.residual[row0 + r]) : 0.f;

  // The second batch goes out before x is staged, so the weights keep streaming through the
  // staging's latency (a load of x and, with the norm, a block reduction and two barriers).
  int next = k + UNROLL * kStep;
  bool have_next = have && batch_fits(next);
  uint4 nxt[UNROLL][ROWS][kMats];
  if (have_next) load_batch(nxt, next);

  gemv_stage_x<T, OutT, W, THREADS, KMAX, PROLOGUE>(p, norm_weights, post_weights, xs);

  while (have) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      float xf[8];
      unpack8<T>(*reinterpret_cast<const uint4*>(&xs[k + u * kStep]), xf);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int m = 0; m < kMats; ++m) {
          float wf[8];
          unpack8<T>(cur[u][r][m], wf);
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[r][m] = fmaf(wf[e], xf[e], acc[r][m]);
        }
    }
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
    float xf[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(&xs[k]), xf);
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        float wf[8];
        unpack8<T>(load_stream16(wrow[r][m] + k), wf);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][m] = fmaf(wf[e], xf[e], acc[r][m]);
      }
  }

#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int m = 0; m < kMats; ++m) acc[r][m] = warp_sum(acc[r][m]);

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
