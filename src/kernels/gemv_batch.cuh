// Batched decode GEMV: y[t, n] = epilogue(sum_k W[n, k] * x[t, k]) for a few tokens at once (decode_batch:
// 2..16 sequences a step), each weight read once for all of them, the dot products on the tensor cores.
//
// Why not the decode GEMV per token or the prefill GEMM: the GEMV reads W once per token (16 tokens,
// 16x the bytes), and the GEMM's 64x64 tiles pad 16 tokens to 64 and give few blocks to the skinny
// matrices of a step. Here a warp streams 16 * MT rows of W with the decode GEMV's 16-byte loads and
// feeds them as the A operand of mma.sync m16n8k16 (f16 or bf16 in, f32 accumulators) whose n
// dimension is the tokens: 8 per n-tile, NT n-tiles (8 or 16 tokens per block row). At 16 tokens a 16-byte
// weight load costs 2 * NT mmas, far below what the loads take; the bytes are W's, as at one token.
//
// Mapping (no repacking): lane (g = lane / 4, t = lane % 4) loads 8 consecutive elements of W's rows g
// and g + 8 of its tile at k0 + 8t (k0 steps by 32), and the 8 elements of x's token g (of n-tile j)
// at the same k. A dot product does not care about the order of k, so the mma's k index is mapped,
// per mma h (0, 1), to k0 + 8t + 4h + {0, 1} for its columns 2t, 2t+1 and to k0 + 8t + 4h + {2, 3} for
// 2t + 8, 2t + 9; A's registers are then (W[g] pair 2h, W[g+8] pair 2h, W[g] pair 2h+1, W[g+8] pair
// 2h+1) and B's (x[g] pair 2h, x[g] pair 2h+1), every one straight from the loads. Two mmas cover the
// 32 elements of a step. The accumulators end holding rows g and g + 8 of the tile for tokens 2t, 2t+1.
// x is read from global memory through the read-only cache (T x K of it is a few KB to 200 KB, read
// by every warp of the step at about the same k): no staging, so no shared-memory limit on K x T. A
// batch's x is requested together, so its L2 latency is paid once a batch, not once a step; with
// X_AHEAD it is loaded into registers with the batch before, so that round trip overlaps the previous
// batch's mmas too (bench/micro/gemv_batch_chain.cu; an L1 prefetch instead helped only at one token).
//
// Everything else follows gemv.cuh: UNROLL steps of weight loads in flight, double-buffered, the first
// batch (and the biases) issued before the programmatic-dependent-launch wait; SPLIT warps over K,
// combined through shared memory; the epilogues plain with bias, residual add ([T, N]), gate/up
// act·mul (two matrices read together) and multi-segment rows (fused QKV). Tokens beyond T (the last
// block row's n-tile padding) read zeros and write nothing. No norm prologue: at T > 1 the norm is a
// region of its own. Compiles for sm_80 and later.
#pragma once

#include "activation.cuh"
#include "common.cuh"
#include "gemm.cuh"  // mma_16816: one m16n8k16 tile, f16 or bf16 in, f32 accumulators
#include "gemv.cuh"

namespace ac {

template <typename T, typename OutT>
struct GemvBatchParams {
  const T* x;         // [tokens, K]
  const T* residual;  // [tokens, N] for kGemvResidual
  const T* w[3];      // segment weights [rows_s, K]; gate_up: w[0] gate, w[1] up (N rows each)
  const T* bias[3];   // per segment, may be null
  OutT* y[3];         // per segment [tokens, rows_s]; gate_up: y[0] [tokens, N]
  int rows[3];        // rows per segment; gate_up: N in rows[0]
  int K;
  int tokens;         // T of the call
};

// x's 8 elements at `p` through the read-only data cache.
__device__ __forceinline__ uint4 gemv_batch_load_x(const void* p) { return __ldg(reinterpret_cast<const uint4*>(p)); }

template <typename T, typename OutT, int THREADS, int MT, int NT, int UNROLL, int SPLIT, int EPILOGUE, int ACT = kActSilu,
          int X_AHEAD = 0>
__device__ __forceinline__ void gemv_batch(const GemvBatchParams<T, OutT>& p) {
  constexpr int kWarps = THREADS / 32;
  constexpr int kRowWarps = kWarps / SPLIT;  // warps that own distinct rows
  constexpr int kMats = EPILOGUE == kGemvGateUp ? 2 : 1;
  constexpr int kRows = 16 * MT;             // rows of W per warp
  constexpr int kStep = 32;                  // elements of K per step: 4 lanes x 8
  constexpr int kAcc = MT * NT * kMats * 4;  // accumulators per lane
  __shared__ float partial[SPLIT > 1 ? kWarps * kAcc * 32 : 1];

  const int K = p.K;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row_warp = warp % kRowWarps, split = warp / kRowWarps;
  const int total_rows = EPILOGUE == kGemvGateUp ? p.rows[0] : p.rows[0] + p.rows[1] + p.rows[2];
  const int row_base = (blockIdx.x * kRowWarps + row_warp) * kRows;
  const int token_base = blockIdx.y * 8 * NT;

  // This lane's weight rows: tile i, half h (row g or g + 8 of the tile), matrix m, at its 8t offset.
  const T* wrow[MT][2][kMats];
  bool row_ok[MT][2];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int row = row_base + 16 * i + g + 8 * h;
      row_ok[i][h] = row < total_rows;
      if (!row_ok[i][h]) row = 0;
      const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);
#pragma unroll
      for (int m = 0; m < kMats; ++m)
        wrow[i][h][m] = gemv_pick(p.w, EPILOGUE == kGemvGateUp ? m : seg) + static_cast<size_t>(row) * K + 8 * t;
    }
  // This lane's token of each n-tile (the B operand's column g), at its 8t offset.
  const T* xrow[NT];
  bool token_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int token = token_base + 8 * j + g;
    token_ok[j] = token < p.tokens;
    xrow[j] = p.x + static_cast<size_t>(token_ok[j] ? token : 0) * K + 8 * t;
  }

  float acc[MT][NT][kMats][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc[i][j][m][c] = 0.f;

  // The K range of this split, in whole steps.
  const int steps = K / kStep;
  const int steps_per_split = (steps + SPLIT - 1) / SPLIT;
  const int k_begin = min(K, split * steps_per_split * kStep);
  const int k_end = min(K, k_begin + steps_per_split * kStep);
  int k = k_begin;

  uint4 cur[UNROLL][MT][2][kMats];
  auto batch_fits = [&](int at) { return at + (UNROLL - 1) * kStep < k_end; };
  auto load_batch = [&](uint4 (&dst)[UNROLL][MT][2][kMats], int at) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int m = 0; m < kMats; ++m) dst[u][i][h][m] = load_stream16(wrow[i][h][m] + at + u * kStep);
  };
  // x at step `at` for each n-tile (zeros past T).
  auto load_x = [&](uint4 (&xb)[NT], int at) {
#pragma unroll
    for (int j = 0; j < NT; ++j) xb[j] = token_ok[j] ? gemv_batch_load_x(xrow[j] + at) : make_uint4(0, 0, 0, 0);
  };
  auto load_x_batch = [&](uint4 (&xb)[UNROLL][NT], int at) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) load_x(xb[u], at + u * kStep);
  };
  // The mmas of one step: the weights in `w`, x in `xb`.
  auto multiply = [&](const uint4 (&w)[MT][2][kMats], const uint4 (&xb)[NT]) {
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        const uint4 lo = w[i][0][m], hi = w[i][1][m];
        const unsigned a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};  // k 8t..8t+3, 8t+4..8t+7
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma_16816<T>(acc[i][j][m], a0, xb[j].x, xb[j].y);
          mma_16816<T>(acc[i][j][m], a1, xb[j].z, xb[j].w);
        }
      }
  };

  bool have = batch_fits(k);
  if (have) load_batch(cur, k);
  // The biases are weights too: loaded before the wait. Lane (g, t) writes rows g and g + 8 of each tile.
  float bias_v[MT][2][kMats];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int m = 0; m < kMats; ++m) {
        bias_v[i][h][m] = 0.f;
        if (!row_ok[i][h]) continue;
        int row = row_base + 16 * i + g + 8 * h;
        const int seg = EPILOGUE == kGemvGateUp ? 0 : gemv_segment(p.rows, row);
        const T* bias = gemv_pick(p.bias, EPILOGUE == kGemvGateUp ? m : seg);
        if (bias) bias_v[i][h][m] = to_float(bias[row]);
      }

  // Above: weights only, overlapping the producer under programmatic dependent launch; x and the
  // residual are read after its grid has finished. The next kernel may launch now.
  launch_dependent_grids();
  wait_for_producer_grid();

  int next = k + UNROLL * kStep;
  bool have_next = have && batch_fits(next);
  uint4 nxt[UNROLL][MT][2][kMats];
  if (have_next) load_batch(nxt, next);
  // x of a batch: with X_AHEAD 0 requested as the batch starts (one L2 round trip a batch, not
  // hidden); otherwise loaded into registers a batch ahead (the planner passes 2, the number of that
  // mode when an L1 prefetch was mode 1; the prefetch helped only at one token and was removed).
  uint4 xs[UNROLL][NT];
  if (X_AHEAD != 0 && have) load_x_batch(xs, k);
  while (have) {
    if (X_AHEAD == 0) load_x_batch(xs, k);
    uint4 xn[UNROLL][NT];
    if (X_AHEAD != 0 && have_next) load_x_batch(xn, next);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) multiply(cur[u], xs[u]);
    k = next;
    have = have_next;
    if (!have) break;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int m = 0; m < kMats; ++m) cur[u][i][h][m] = nxt[u][i][h][m];
    if (X_AHEAD != 0)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int j = 0; j < NT; ++j) xs[u][j] = xn[u][j];
    next = k + UNROLL * kStep;
    have_next = batch_fits(next);
    if (have_next) load_batch(nxt, next);
  }
  for (; k < k_end; k += kStep) {  // steps short of a whole batch
    uint4 w[MT][2][kMats];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int m = 0; m < kMats; ++m) w[i][h][m] = load_stream16(wrow[i][h][m] + k);
    uint4 xb[NT];
    load_x(xb, k);
    multiply(w, xb);
  }

  if (SPLIT > 1) {
    // Lane-major partials: warp w's accumulator a of lane l at (w * kAcc + a) * 32 + l.
    float* mine = partial + warp * kAcc * 32 + lane;
    int a = 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int m = 0; m < kMats; ++m)
#pragma unroll
          for (int c = 0; c < 4; ++c, ++a) mine[a * 32] = acc[i][j][m][c];
    __syncthreads();
    if (split != 0) return;
    a = 0;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int m = 0; m < kMats; ++m)
#pragma unroll
          for (int c = 0; c < 4; ++c, ++a) {
            float sum = 0.f;
#pragma unroll
            for (int s = 0; s < SPLIT; ++s) sum += partial[((s * kRowWarps + row_warp) * kAcc + a) * 32 + lane];
            acc[i][j][m][c] = sum;
          }
  }

  // Accumulator c of tile (i, j): row g + 8 * (c / 2) of the tile, token 2t + c % 2 of the n-tile.
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (!row_ok[i][h]) continue;
      const int row = row_base + 16 * i + g + 8 * h;
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int token = token_base + 8 * j + 2 * t + e;
          if (token >= p.tokens) continue;
          const int c = 2 * h + e;
          if (EPILOGUE == kGemvGateUp) {
            const float gate = acc[i][j][0][c] + bias_v[i][h][0];
            const float up = acc[i][j][kMats - 1][c] + bias_v[i][h][kMats - 1];
            p.y[0][static_cast<size_t>(token) * total_rows + row] = from_float<OutT>(gate_activation<ACT>(gate) * up);
            continue;
          }
          int local = row;
          const int seg = gemv_segment(p.rows, local);
          float v = acc[i][j][0][c] + bias_v[i][h][0];
          if (EPILOGUE == kGemvResidual) v += to_float(p.residual[static_cast<size_t>(token) * total_rows + row]);
          gemv_pick(p.y, seg)[static_cast<size_t>(token) * gemv_pick(p.rows, seg) + local] = from_float<OutT>(v);
        }
    }
}

}  // namespace ac
