// Decode GEMV family: y[n] = epilogue(sum_k W[n, k] * x[k]) for one token, streaming W once.
//
// Bytes: the weights (N*K*2) dominate, so the kernel is built to keep many 16-byte weight loads in
// flight: each warp owns ROWS rows, each lane reads VEC=8 consecutive elements per step and the
// K loop is unrolled UNROLL steps deep; x is staged once per block in shared memory. With SPLIT > 1
// the K range is split across SPLIT warps of the block and combined through shared memory (for
// few rows and long K, e.g. down_proj N=2048, K=6144).
// The first batch of weight loads is issued before the programmatic-dependent-launch wait (the
// template places its own wait), so it overlaps the kernel before it.
// Epilogues: plain (optionally + bias), residual add, gate/up SiLU·mul (two weight matrices read
// together), multi-segment rows (fused QKV: up to 3 weights/biases/outputs addressed as one N).
// Prologue (NORM): x is the input of an RMSNorm that the block applies while staging it, in the
// unfused kernel's arithmetic (fp32 sum of squares, norm_w * (x * rsqrt(mean + eps)), rounded to T),
// so the normalized row never goes through memory and its kernel launch disappears.
#pragma once

#include "common.cuh"

namespace ac {

enum GemvEpilogue { kGemvPlain = 0, kGemvResidual = 1, kGemvGateUp = 2 };

template <typename T, typename OutT>
struct GemvParams {
  const T* x;              // [K]
  const T* norm_w;         // [K] RMSNorm weight when the prologue is on
  float norm_eps;
  const T* residual;       // [N] for kGemvResidual
  const T* w[3];           // segment weights [N_s, K]; for kGemvGateUp: w[0] gate, w[1] up
  const T* bias[3];        // per segment, may be null
  OutT* y[3];              // per segment outputs
  int rows[3];             // rows per segment (segments 1, 2 may have 0 rows)
  int K;
};

// Stages x (or RMSNorm(x) with NORM) into shared memory; every thread handles the same 16-byte
// chunks in both passes, so only the block sum needs a barrier. Ends with the block's barrier.
template <typename T, typename OutT, int THREADS, bool NORM>
__device__ __forceinline__ void gemv_stage_x(const GemvParams<T, OutT>& p, T* xs) {
  constexpr int kVec = 8;
  const int K = p.K;
  if (!NORM) {
    for (int i = threadIdx.x * kVec; i < K; i += THREADS * kVec)
      *reinterpret_cast<uint4*>(&xs[i]) = load16(p.x + i);
    __syncthreads();
    return;
  }
  __shared__ float scratch[THREADS / 32];
  float squares = 0.f;
  for (int i = threadIdx.x * kVec; i < K; i += THREADS * kVec) {
    const uint4 raw = load16(p.x + i);
    *reinterpret_cast<uint4*>(&xs[i]) = raw;
    float xf[8];
    unpack8<T>(raw, xf);
#pragma unroll
    for (int e = 0; e < 8; ++e) squares = fmaf(xf[e], xf[e], squares);
  }
  const float inv_rms = rsqrtf(block_sum<THREADS>(squares, scratch) / static_cast<float>(K) + p.norm_eps);
  for (int i = threadIdx.x * kVec; i < K; i += THREADS * kVec) {
    float xf[8], wf[8];
    unpack8<T>(*reinterpret_cast<const uint4*>(&xs[i]), xf);
    unpack8<T>(load16(p.norm_w + i), wf);
    alignas(16) T out[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = from_float<T>(wf[e] * (xf[e] * inv_rms));
    *reinterpret_cast<uint4*>(&xs[i]) = *reinterpret_cast<const uint4*>(out);
  }
  __syncthreads();
}

template <typename T, typename OutT, int THREADS, int ROWS, int UNROLL, int SPLIT, int EPILOGUE, int KMAX, bool NORM = false>
__device__ __forceinline__ void gemv(const GemvParams<T, OutT>& p) {
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
    int seg = 0;
    if (EPILOGUE != kGemvGateUp) {
      if (row >= p.rows[0]) { row -= p.rows[0]; seg = 1; if (row >= p.rows[1]) { row -= p.rows[1]; seg = 2; } }
    }
#pragma unroll
    for (int m = 0; m < kMats; ++m) wrow[r][m] = p.w[EPILOGUE == kGemvGateUp ? m : seg] + static_cast<size_t>(row) * K;
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

  // Everything above reads only weights, so under programmatic dependent launch it overlaps the
  // producer kernel; x (and the residual) are read only after the producer grid has finished.
  wait_for_producer_grid();
  launch_dependent_grids();

  gemv_stage_x<T, OutT, THREADS, NORM>(p, xs);

  while (have) {
    const int next = k + UNROLL * kStep;
    const bool have_next = batch_fits(next);
    uint4 nxt[UNROLL][ROWS][kMats];
    if (have_next) load_batch(nxt, next);
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
    if (have_next) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int m = 0; m < kMats; ++m) cur[u][r][m] = nxt[u][r][m];
    }
    k = next;
    have = have_next;
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
      const float gate = acc[r][0] + (p.bias[0] ? to_float(p.bias[0][row]) : 0.f);
      const float up = acc[r][1] + (p.bias[1] ? to_float(p.bias[1][row]) : 0.f);
      p.y[0][row] = from_float<OutT>(silu(gate) * up);
      continue;
    }
    int seg = 0;
    if (row >= p.rows[0]) { row -= p.rows[0]; seg = 1; if (row >= p.rows[1]) { row -= p.rows[1]; seg = 2; } }
    float v = acc[r][0];
    if (p.bias[seg]) v += to_float(p.bias[seg][row]);
    if (EPILOGUE == kGemvResidual) v += to_float(p.residual[row]);
    p.y[seg][row] = from_float<OutT>(v);
  }
}

}  // namespace ac
