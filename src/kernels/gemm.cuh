// Prefill GEMM family: C[M, N] = epilogue(A[M, K] · W[N, K]ᵀ) for a token count M = T that is known
// only at launch time; N and K are static.
//
// Two kernels share the parameters and the epilogues:
//   gemm_mma  — Tensor Cores. A block owns a BLOCK_M x BLOCK_N tile (per weight matrix), split over
//               WARPS_M x WARPS_N warps; each warp issues mma.sync.m16n8k16 (f16 or bf16 in, fp32
//               accumulators) on fragments read with ldmatrix. Global→shared copies are cp.async,
//               STAGES deep (one barrier per BLOCK_K step), into rows of BLOCK_K elements whose
//               16-byte chunks are XOR-swizzled so that neither the copies nor the eight row
//               addresses of an ldmatrix hit the same bank twice; fragments are double-buffered
//               in registers across k16 steps and across the barrier. Tiles are visited in groups
//               of kGemmGroupM row tiles so a wave of blocks shares its A rows and W columns in L2.
//   gemm_simt — the conservative fallback: shared-memory tiles in fp32 and FMA, TM x TN outputs per
//               thread.
// Bounds: rows past M are zero-filled on load and masked on store; columns past a segment's end
// likewise (N % 8 == 0 is required, so a column pair never straddles the edge); K % BLOCK_K == 0.
// Epilogues: plain (optionally + bias, any output dtype: the lm_head cast), residual add, gate/up
// act·mul (act SiLU or GELU, activation.cuh; both weight tiles are computed by the same warp and
// combined in registers),
// multi-segment rows (fused QKV: up to 3 weights/biases/outputs addressed as one N; every segment
// but the last is a multiple of BLOCK_N so that a block stays inside one segment), and a generated
// program (any pointwise chain after a linear: the caller's Epilogue type, whose epilogue(row, col,
// x, y) takes two accumulators of a row, bias not added, and computes and stores everything after
// them).
#pragma once

#include "activation.cuh"
#include "common.cuh"

namespace ac {

enum GemmEpilogue { kGemmPlain = 0, kGemmResidual = 1, kGemmGateUp = 2, kGemmProgram = 3 };

// The epilogue of the fixed kinds: nothing beyond the params.
struct NoEpilogue {};

template <typename T, typename OutT>
struct GemmParams {
  const T* a;         // [M, K]
  const T* residual;  // [M, N] for kGemmResidual
  const T* w[3];      // segment weights [N_s, K]; for kGemmGateUp: w[0] gate, w[1] up, both [N, K]
  const T* bias[3];   // [N_s] per segment (gate, up for kGemmGateUp), may be null
  OutT* c[3];         // [M, N_s] per segment
  int cols[3];        // N_s: columns per segment (segments 1, 2 may have none)
  int M;              // rows: the tokens of the call
  int K;
};

// Row tiles visited together (the L2 working set of a wave: kGemmGroupM row tiles of A and the W
// column tiles they meet).
constexpr int kGemmGroupM = 16;

// The segment a block's columns fall in and everything the epilogue needs about it.
template <typename T, typename OutT>
struct GemmSegment {
  const T* w[2];
  const T* bias[2];
  OutT* c;
  int n0;    // first column of the block within the segment
  int cols;  // columns of the segment
};

template <typename T, typename OutT, int EPILOGUE>
__device__ __forceinline__ GemmSegment<T, OutT> gemm_segment(const GemmParams<T, OutT>& p, int n0) {
  GemmSegment<T, OutT> s;
  int seg = 0;
  if (EPILOGUE != kGemmGateUp && n0 >= p.cols[0]) {
    n0 -= p.cols[0];
    seg = 1;
    if (n0 >= p.cols[1]) { n0 -= p.cols[1]; seg = 2; }
  }
  s.w[0] = p.w[EPILOGUE == kGemmGateUp ? 0 : seg];
  s.w[1] = p.w[EPILOGUE == kGemmGateUp ? 1 : seg];
  s.bias[0] = p.bias[EPILOGUE == kGemmGateUp ? 0 : seg];
  s.bias[1] = p.bias[EPILOGUE == kGemmGateUp ? 1 : seg];
  s.c = p.c[seg];
  s.n0 = n0;
  s.cols = p.cols[EPILOGUE == kGemmGateUp ? 0 : seg];
  return s;
}

template <typename T> __device__ __forceinline__ float2 load2_float(const T* ptr);
template <> __device__ __forceinline__ float2 load2_float<__half>(const __half* ptr) {
  return __half22float2(*reinterpret_cast<const __half2*>(ptr));
}
template <> __device__ __forceinline__ float2 load2_float<__nv_bfloat16>(const __nv_bfloat16* ptr) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(ptr));
}

template <typename T> __device__ __forceinline__ void store2(T* ptr, float x, float y);
template <> __device__ __forceinline__ void store2<float>(float* ptr, float x, float y) {
  *reinterpret_cast<float2*>(ptr) = make_float2(x, y);
}
template <> __device__ __forceinline__ void store2<__half>(__half* ptr, float x, float y) {
  *reinterpret_cast<__half2*>(ptr) = __floats2half2_rn(x, y);
}
template <> __device__ __forceinline__ void store2<__nv_bfloat16>(__nv_bfloat16* ptr, float x, float y) {
  *reinterpret_cast<__nv_bfloat162*>(ptr) = __floats2bfloat162_rn(x, y);
}

// Writes columns (col, col + 1) of row `row` (segment-local; the caller checked both bounds).
// v[m] holds the two accumulators of weight matrix m.
template <typename T, typename OutT, int EPILOGUE, int ACT, typename Epilogue>
__device__ __forceinline__ void gemm_store_pair(const GemmParams<T, OutT>& p, const GemmSegment<T, OutT>& s, int row,
                                                int col, const float2 (&v)[EPILOGUE == kGemmGateUp ? 2 : 1], const Epilogue& ep) {
  if constexpr (EPILOGUE == kGemmProgram) {
    ep.epilogue(row, col, v[0].x, v[0].y);
    return;
  }
  float x = v[0].x, y = v[0].y;
  if (s.bias[0]) {
    const float2 b = load2_float(s.bias[0] + col);
    x += b.x;
    y += b.y;
  }
  if constexpr (EPILOGUE == kGemmGateUp) {
    float ux = v[1].x, uy = v[1].y;
    if (s.bias[1]) {
      const float2 b = load2_float(s.bias[1] + col);
      ux += b.x;
      uy += b.y;
    }
    x = gate_activation<ACT>(x) * ux;
    y = gate_activation<ACT>(y) * uy;
  }
  const size_t at = static_cast<size_t>(row) * s.cols + col;
  if constexpr (EPILOGUE == kGemmResidual) {
    const float2 r = load2_float(p.residual + at);
    x += r.x;
    y += r.y;
  }
  store2<OutT>(s.c + at, x, y);
}

// ---- Tensor-core primitives (sm_80+) ----

// smem_u32, cp_async16, cp_async_commit and cp_async_wait: common.cuh.

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a · b for one m16n8k16 tile; a row-major, b column-major (a W row), fp32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <>
__device__ __forceinline__ void mma_16816<__half>(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Element offset of 16-byte chunk `chunk` of row `row` in a shared tile with rows of BK elements.
// BK = 64 (128-byte rows): chunk ^ (row % 8). BK = 32 (64-byte rows, two to a 128-byte line):
// chunk ^ ((row / 2) % 4). Either way the eight rows an ldmatrix reads, and the eight chunks a
// quarter-warp copies, cover all 32 banks. The key depends on row % 8 only, and XOR distributes
// over the disjoint bits of chunk = 2 * k16_step + half, so the rows i * 16 apart that a warp reads
// share one key and the address of a k16 step is a per-lane constant plus an immediate.
template <int BK>
__device__ __forceinline__ int swizzle_key(int row) {
  static_assert(BK == 32 || BK == 64, "rows of 32 or 64 elements");
  return BK == 64 ? (row & 7) : ((row >> 1) & 3);
}
template <int BK>
__device__ __forceinline__ int swizzled(int row, int chunk) {
  return row * BK + ((chunk ^ swizzle_key<BK>(row)) << 3);
}

template <typename T, typename OutT, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, int EPILOGUE,
          int ACT = kActSilu, typename Epilogue = NoEpilogue>
__device__ __forceinline__ void gemm_mma(const GemmParams<T, OutT>& p, const Epilogue& ep = Epilogue{}) {
  constexpr int kThreads = WARPS_M * WARPS_N * 32;
  constexpr int kMats = EPILOGUE == kGemmGateUp ? 2 : 1;
  constexpr int kWarpM = BM / WARPS_M, kWarpN = BN / WARPS_N;  // warp tile, per weight matrix
  constexpr int kMT = kWarpM / 16, kNT = kWarpN / 8;           // mma tiles per warp
  constexpr int kChunksPerRow = BK / 8;
  constexpr int kAIters = BM * kChunksPerRow / kThreads;  // 16-byte copies per thread per stage
  constexpr int kBIters = BN * kChunksPerRow / kThreads;  // per weight matrix
  // Dynamic shared memory (the launch's shared_bytes): STAGES x (A [BM, BK] + kMats W [BN, BK]).
  constexpr int kStageElems = (BM + kMats * BN) * BK;
  static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0, "warp tiles are multiples of 16 x 16");
  static_assert(kAIters * kThreads == BM * kChunksPerRow && kBIters * kThreads == BN * kChunksPerRow,
                "every thread copies the same number of chunks");
  static_assert(STAGES >= 2, "a pipeline has at least two stages");
  extern __shared__ __align__(128) unsigned char gemm_smem[];
  T* smem = reinterpret_cast<T*>(gemm_smem);

  // Grouped tile order: kGemmGroupM row tiles sweep the column tiles together.
  const int tiles_n = gridDim.x, tiles_m = gridDim.y;
  const int linear = blockIdx.y * tiles_n + blockIdx.x;
  const int group_span = kGemmGroupM * tiles_n;
  const int first_m = (linear / group_span) * kGemmGroupM;
  const int group_m = min(tiles_m - first_m, kGemmGroupM);
  const int tile_m = first_m + (linear % group_span) % group_m;
  const int tile_n = (linear % group_span) / group_m;

  const int M = p.M, K = p.K;
  const int m0 = tile_m * BM;
  const GemmSegment<T, OutT> seg = gemm_segment<T, OutT, EPILOGUE>(p, tile_n * BN);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

  // Copy assignments. Thread `tid` copies chunk tid % kChunksPerRow of rows tid / kChunksPerRow +
  // i * kRowStep: the same chunk and swizzle key every time (kRowStep is a multiple of 8), so the
  // shared offset is one register plus an immediate, and a row costs a 32-bit element offset (rows
  // past the edge read row 0 with a zero-byte copy; M * K < 2^31) and a bit of a validity mask.
  constexpr int kRowStep = kThreads / kChunksPerRow;
  static_assert(kRowStep % 8 == 0, "copied rows share a swizzle key");
  const int copy_row = tid / kChunksPerRow, copy_chunk = tid % kChunksPerRow;
  const unsigned a_dst = swizzled<BK>(copy_row, copy_chunk) * 2;
  const unsigned b_dst = (BM * BK + swizzled<BK>(copy_row, copy_chunk)) * 2;
  const T* a_src = p.a + copy_chunk * 8;
  int a_row_off[kAIters];
  unsigned a_ok = 0;
#pragma unroll
  for (int i = 0; i < kAIters; ++i) {
    const int row = m0 + copy_row + i * kRowStep;
    a_row_off[i] = row < M ? row * K : 0;
    a_ok |= (row < M ? 1u : 0u) << i;
  }
  const T* b_src[kMats];
#pragma unroll
  for (int m = 0; m < kMats; ++m) b_src[m] = seg.w[m] + copy_chunk * 8;
  int b_row_off[kBIters];
  unsigned b_ok = 0;
#pragma unroll
  for (int i = 0; i < kBIters; ++i) {
    const int row = seg.n0 + copy_row + i * kRowStep;
    b_row_off[i] = row < seg.cols ? row * K : 0;
    b_ok |= (row < seg.cols ? 1u : 0u) << i;
  }
  const unsigned smem_base = smem_u32(smem);
  auto load_stage = [&](int stage, int k_tile) {
    const unsigned base = smem_base + stage * kStageElems * 2;
    const int k = k_tile * BK;
#pragma unroll
    for (int i = 0; i < kAIters; ++i)
      cp_async16(base + a_dst + i * kRowStep * BK * 2, a_src + (a_row_off[i] + k), (a_ok >> i) & 1u);
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int i = 0; i < kBIters; ++i)
        cp_async16(base + b_dst + (m * BN + i * kRowStep) * BK * 2, b_src[m] + (b_row_off[i] + k), (b_ok >> i) & 1u);
  };

  float acc[kMats][kMT][kNT][4];
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int j = 0; j < kNT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[m][i][j][e] = 0.f;

  // ldmatrix rows of this lane. A (x4 = a 16x16 tile): lanes 0-15 rows 0-15 of the first 8 k,
  // lanes 16-31 the same rows at k + 8. W (x4 = two 8-column tiles x 16 k): lanes 0-7 columns 0-7
  // at k, 8-15 columns 0-7 at k + 8, 16-23 columns 8-15 at k, 24-31 columns 8-15 at k + 8.
  // Byte offsets within a stage for each k16 step; tile i (j) adds i * 16 rows as an immediate.
  constexpr int kSteps = BK / 16;
  const int a_row = warp_m * kWarpM + (lane & 15), a_half = lane >> 4;
  const int b_row = warp_n * kWarpN + (lane & 7) + ((lane >> 4) << 3), b_half = (lane >> 3) & 1;
  // Step kk flips chunk bits 2 * kk, i.e. byte bits kk << 5, of the step-0 offset.
  const unsigned a_off = swizzled<BK>(a_row, a_half) * 2;
  const unsigned b_off = (BM * BK + swizzled<BK>(b_row, b_half)) * 2;
  unsigned af[2][kMT][4];
  unsigned bf[2][kMats][kNT][2];
  auto load_fragments = [&](int buf, unsigned stage, int kk) {
#pragma unroll
    for (int i = 0; i < kMT; ++i) ldmatrix_x4(af[buf][i], stage + (a_off ^ (kk << 5)) + i * 16 * BK * 2);
#pragma unroll
    for (int m = 0; m < kMats; ++m)
#pragma unroll
      for (int j = 0; j < kNT / 2; ++j) {
        unsigned r[4];
        ldmatrix_x4(r, stage + (b_off ^ (kk << 5)) + (m * BN + j * 16) * BK * 2);
        bf[buf][m][2 * j][0] = r[0];
        bf[buf][m][2 * j][1] = r[1];
        bf[buf][m][2 * j + 1][0] = r[2];
        bf[buf][m][2 * j + 1][1] = r[3];
      }
  };

  // Multistage main loop (CUTLASS's): STAGES - 1 tiles in flight; fragments of the next k16 step
  // are read while this one multiplies, and the last step of a tile waits for the next tile and
  // reads its first fragments before multiplying, so the barrier's latency hides behind mma.
  constexpr unsigned kStageBytes = kStageElems * 2;
  const int k_tiles = K / BK;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_stage(s, s);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 2>();
  __syncthreads();
  int read_stage = 0, write_stage = STAGES - 1;
  load_fragments(0, smem_base, 0);

  for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      if (kk == kSteps - 1) {
        // Tile kt + 1 has landed for this thread; the barrier makes it everyone's, and every
        // warp has read its last fragments of tile kt (so its stage may be overwritten next).
        read_stage = read_stage + 1 == STAGES ? 0 : read_stage + 1;
        cp_async_wait<STAGES - 2>();
        __syncthreads();
      }
      load_fragments((kk + 1) & 1, smem_base + read_stage * kStageBytes, (kk + 1) % kSteps);
      if (kk == 0) {
        // Refill the stage tile kt - 1 used with tile kt + STAGES - 1.
        const int next = kt + STAGES - 1;
        if (next < k_tiles) load_stage(write_stage, next);
        cp_async_commit();
        write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
      }
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int i = 0; i < kMT; ++i)
#pragma unroll
          for (int j = 0; j < kNT; ++j) mma_16816<T>(acc[m][i][j], af[kk & 1][i], bf[kk & 1][m][j][0], bf[kk & 1][m][j][1]);
    }
  }
  cp_async_wait<0>();

  // Accumulator (i, j) of a lane: rows lane/4 and lane/4 + 8, columns 2*(lane%4) and + 1.
#pragma unroll
  for (int i = 0; i < kMT; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + warp_m * kWarpM + i * 16 + (lane >> 2) + h * 8;
      if (row >= M) continue;
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        const int col = seg.n0 + warp_n * kWarpN + j * 8 + (lane & 3) * 2;
        if (col >= seg.cols) continue;
        float2 v[kMats];
#pragma unroll
        for (int m = 0; m < kMats; ++m) v[m] = make_float2(acc[m][i][j][2 * h], acc[m][i][j][2 * h + 1]);
        gemm_store_pair<T, OutT, EPILOGUE, ACT>(p, seg, row, col, v, ep);
      }
    }
}

// The fallback: fp32 FMA over shared tiles. (BM / TM) x (BN / TN) threads, each owning TM x TN
// outputs per weight matrix; tiles are stored k-major so a thread's TM (TN) operands are adjacent.
template <typename T, typename OutT, int BM, int BN, int BK, int TM, int TN, int EPILOGUE, int ACT = kActSilu,
          typename Epilogue = NoEpilogue>
__device__ __forceinline__ void gemm_simt(const GemmParams<T, OutT>& p, const Epilogue& ep = Epilogue{}) {
  constexpr int kThreads = (BM / TM) * (BN / TN);
  constexpr int kMats = EPILOGUE == kGemmGateUp ? 2 : 1;
  static_assert(TN % 2 == 0, "outputs are stored in column pairs");
  __shared__ float as[BK][BM + 1];         // [k, m]
  __shared__ float bs[kMats][BK][BN + 1];  // [mat, k, n]

  const int M = p.M, K = p.K;
  const int m0 = blockIdx.y * BM;
  const GemmSegment<T, OutT> seg = gemm_segment<T, OutT, EPILOGUE>(p, blockIdx.x * BN);
  const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);

  float acc[kMats][TM][TN];
#pragma unroll
  for (int m = 0; m < kMats; ++m)
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[m][i][j] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += kThreads) {
      const int r = e / BK, k = e % BK;
      as[k][r] = m0 + r < M ? to_float(p.a[static_cast<size_t>(m0 + r) * K + k0 + k]) : 0.f;
    }
#pragma unroll
    for (int m = 0; m < kMats; ++m)
      for (int e = threadIdx.x; e < BN * BK; e += kThreads) {
        const int r = e / BK, k = e % BK;
        const int n = seg.n0 + r;
        bs[m][k][r] = n < seg.cols ? to_float(seg.w[m][static_cast<size_t>(n) * K + k0 + k]) : 0.f;
      }
    __syncthreads();
#pragma unroll 4
    for (int k = 0; k < BK; ++k) {
      float av[TM];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = as[k][ty * TM + i];
#pragma unroll
      for (int m = 0; m < kMats; ++m)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const float bv = bs[m][k][tx * TN + j];
#pragma unroll
          for (int i = 0; i < TM; ++i) acc[m][i][j] = fmaf(av[i], bv, acc[m][i][j]);
        }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + ty * TM + i;
    if (row >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; j += 2) {
      const int col = seg.n0 + tx * TN + j;
      if (col >= seg.cols) continue;
      float2 v[kMats];
#pragma unroll
      for (int m = 0; m < kMats; ++m) v[m] = make_float2(acc[m][i][j], acc[m][i][j + 1]);
      gemm_store_pair<T, OutT, EPILOGUE, ACT>(p, seg, row, col, v, ep);
    }
  }
}

}  // namespace ac
