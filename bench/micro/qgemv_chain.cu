// int4 decode GEMVs on the GPU, outside the compiler (issue 24): Qwen3-1.7B's four decode GEMV shapes with
// int4 g128 weights (f16 scales, no zero points; ir/quant.h's row layout), each configuration launched over
// 28 layers of distinct weights in a CUDA graph with programmatic dependent launch, as the runtime replays
// a decode step. The question: why the int4 GEMVs stream their bytes at 0.7-1.8 TB/s when the f16 GEMV
// streams 3.9 (bench/results/2026-11-27-h200/session4/quant-qmma/). Times the tensor-core kernel (mma_*,
// the compiler's candidates for these shapes, its pick first) and the scalar kernel; every configuration
// of a shape is checked against the first one's output. QGEMV_NCU=1 launches each once (for Nsight
// Compute) instead of timing. bench/results/2026-11-28-h200/session11/qgemv-chain/ has what it showed and
// the variants tried with it (a shared-memory-fed mode, not kept). Then the layer section: the picks chained
// as a decode layer from DRAM, from L2 (one layer's weights 28 times), and with a second graph stream warming
// the next layer in L2 (QGEMV_LAYER_ONLY=1 runs only it; bench/results/2026-11-28-h200/session12/qgemv-layer/).
//   nvcc -O3 -std=c++20 --use_fast_math -gencode arch=compute_90a,code=sm_90a -Isrc/kernels -Ibench/micro \
//        bench/micro/qgemv_chain.cu -o qgemv_chain && ./qgemv_chain
#include "decode_chain.cuh"
#include "qgemv.cuh"
#include "qgemv_mma.cuh"

#include <cmath>

constexpr int G = 128;
__host__ __device__ constexpr int row_bytes(int K) { return (K / 2 + K / G * 2 + 15) / 16 * 16; }

struct QPtrs {
  const __half *x, *norm_w, *residual, *w[3];
  __half* y[3];
  const unsigned char* qw[3];
};

using QP = ac::QGemvParams<__half, __half>;

template <int KIND>
__device__ __forceinline__ QP bind(const QPtrs& a) {
  QP q;
  bind_shape<KIND>(q.g, a);
  q.g.norm_w = KIND == kQkv || KIND == kGateUp ? a.norm_w : nullptr;
  q.g.norm_eps = 1e-6f;
  for (int s = 0; s < 3; ++s) q.w[s] = q.g.w[s] ? a.qw[s] : nullptr;
  q.x_stride = q.g.K;
  q.residual_stride = q.g.rows[0];
  return q;
}

__host__ __device__ constexpr int kPrologueOf(int kind) { return kind == kQkv || kind == kGateUp ? ac::kGemvNorm : ac::kGemvNoNorm; }
__host__ __device__ constexpr int kKOf(int kind) { return kind == kDown ? I : H; }

template <int THREADS, int ROWS, int UNROLL, int SPLIT, int KIND>
__global__ void __launch_bounds__(THREADS) qmma_kernel(const QPtrs a) {
  const QP q = bind<KIND>(a);
  ac::qgemv_mma<__half, __half, __half, ac::kQInt4, G, row_bytes(kKOf(KIND)), THREADS, ROWS, UNROLL, SPLIT, kEpilogueOf<KIND>, kKOf(KIND),
                kPrologueOf(KIND)>(q);
}

template <int THREADS, int ROWS, int UNROLL, int SPLIT, int KIND>
__global__ void __launch_bounds__(THREADS) qscalar_kernel(const QPtrs a) {
  const QP q = bind<KIND>(a);
  ac::qgemv<__half, __half, __half, ac::kQInt4, G, row_bytes(kKOf(KIND)), THREADS, ROWS, UNROLL, SPLIT, kEpilogueOf<KIND>, kKOf(KIND),
            kPrologueOf(KIND)>(q);
}

// L2 warming (the layer section below): `cp.async.bulk.prefetch.L2` of up to five byte ranges in
// 16-KB pieces, one piece per thread in turn. A hint: nothing waits for it.
struct PrefetchRanges {
  const unsigned char* p[5];
  unsigned long long n[5];
};
__global__ void prefetch_l2(const PrefetchRanges r) {
  constexpr unsigned long long kPiece = 16384;
  for (int s = 0; s < 5; ++s) {
    if (!r.p[s]) continue;
    const unsigned long long pieces = (r.n[s] + kPiece - 1) / kPiece;
    for (unsigned long long c = blockIdx.x * size_t{blockDim.x} + threadIdx.x; c < pieces; c += size_t{gridDim.x} * blockDim.x) {
      const unsigned long long at = c * kPiece;
      const unsigned size = static_cast<unsigned>(r.n[s] - at < kPiece ? r.n[s] - at : kPiece);
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(r.p[s] + at), "r"(size) : "memory");
    }
  }
}

// The attention stand-in: 64 blocks that hold their SM for `cycles` after the producer wait (DRAM idles).
__global__ void __launch_bounds__(256) attention_standin(const __half* q, __half* out, long long cycles) {
  ac::wait_for_producer_grid();
  ac::launch_dependent_grids();
  const int i = blockIdx.x * 256 + threadIdx.x;
  float v = __half2float(q[i % H]);
  const long long start = clock64();
  while (clock64() - start < cycles) v = v * 0.999f + 1e-3f;
  if (i < H) out[i] = __float2half_rn(v);
}

struct QConfig {
  std::string name;
  void (*kernel)(QPtrs);
  int threads, rows_per_block;
};

template <int THREADS, int ROWS, int UNROLL, int SPLIT, int KIND>
QConfig mma() {
  char name[64];
  std::snprintf(name, sizeof name, "mma_t%d_r%d_u%d_s%d", THREADS, ROWS, UNROLL, SPLIT);
  return {name, qmma_kernel<THREADS, ROWS, UNROLL, SPLIT, KIND>, THREADS, THREADS / 32 / SPLIT * ROWS};
}
template <int THREADS, int ROWS, int UNROLL, int SPLIT, int KIND>
QConfig scalar() {
  char name[64];
  std::snprintf(name, sizeof name, "scalar_t%d_r%d_u%d_s%d", THREADS, ROWS, UNROLL, SPLIT);
  return {name, qscalar_kernel<THREADS, ROWS, UNROLL, SPLIT, KIND>, THREADS, THREADS / 32 / SPLIT * ROWS};
}
// Random nibbles and scales of about 1/64 (so outputs stay in f16's range).
__global__ void fill_int4(unsigned char* w, int rows, int K, unsigned seed) {
  const int rb = row_bytes(K);
  const size_t n = static_cast<size_t>(rows) * rb;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const size_t at = i % rb;
    if (at < static_cast<size_t>(K / 2)) {
      w[i] = static_cast<unsigned char>(h);
    } else if (at < static_cast<size_t>(K / 2 + K / G * 2)) {
      const __half s = __float2half((1.f + (h & 0xff) / 256.f) / 64.f);
      const unsigned short bits = __half_as_ushort(s);
      w[i] = (at - K / 2) % 2 == 0 ? static_cast<unsigned char>(bits & 0xff) : static_cast<unsigned char>(bits >> 8);
    } else {
      w[i] = 0;
    }
  }
}

unsigned char* alloc_int4(int rows, int K) {
  static unsigned seed = 11;
  unsigned char* p;
  const size_t n = static_cast<size_t>(rows) * row_bytes(K);
  CHECK(cudaMalloc(&p, n));
  fill_int4<<<1024, 256>>>(p, rows, K, seed++ * 7919u);
  CHECK(cudaDeviceSynchronize());
  return p;
}

struct QLayer {
  unsigned char *qkv, *o, *gate, *up, *down;
  __half *norm1, *norm2;
};

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<QLayer> layers(LAYERS);
  for (auto& l : layers) {
    l.qkv = alloc_int4(QKV, H);
    l.o = alloc_int4(H, H);
    l.gate = alloc_int4(I, H);
    l.up = alloc_int4(I, H);
    l.down = alloc_int4(H, I);
    l.norm1 = alloc(H);
    l.norm2 = alloc(H);
  }
  __half *h = alloc(H), *attn = alloc(H), *h2 = alloc(H), *act = alloc(I), *out = alloc(I > QKV ? I : QKV), *check = alloc(I > QKV ? I : QKV);
  auto ptrs = [&](int kind, const QLayer& l, __half* y) {
    QPtrs p{};
    switch (kind) {
      case kQkv:
        p.x = h;
        p.norm_w = l.norm1;
        p.qw[0] = l.qkv;
        p.qw[1] = l.qkv + size_t{H} * row_bytes(H);
        p.qw[2] = l.qkv + size_t{H + KVD} * row_bytes(H);
        p.y[0] = y;
        p.y[1] = y + H;
        p.y[2] = y + H + KVD;
        break;
      case kO:
        p.x = attn;
        p.residual = h;
        p.qw[0] = l.o;
        p.y[0] = y;
        break;
      case kGateUp:
        p.x = h2;
        p.norm_w = l.norm2;
        p.qw[0] = l.gate;
        p.qw[1] = l.up;
        p.y[0] = y;
        break;
      default:
        p.x = act;
        p.residual = h2;
        p.qw[0] = l.down;
        p.y[0] = y;
    }
    // bind_shape reads w[] only to tell which segments exist.
    for (int s = 0; s < 3; ++s) p.w[s] = p.qw[s] ? reinterpret_cast<const __half*>(p.qw[s]) : nullptr;
    return p;
  };
  auto launch_q = [&](const QConfig& c, const QPtrs& p, int rows) {
    launch_programmatic(c.kernel, dim3((rows + c.rows_per_block - 1) / c.rows_per_block), dim3(c.threads), 0, stream, p);
  };

  // The compiler's candidates for Qwen3-1.7B int4 g128 on an H200 (session4/quant-qmma report), the
  // selected one first, then others.
  std::vector<QConfig> qkv = {mma<256, 8, 4, 4, kQkv>(),     mma<128, 8, 4, 2, kQkv>(),      mma<128, 16, 2, 4, kQkv>(),
                              mma<256, 16, 2, 8, kQkv>(),    mma<128, 8, 2, 4, kQkv>(),      scalar<256, 2, 2, 1, kQkv>()};
  std::vector<QConfig> o = {mma<128, 8, 4, 4, kO>(),    mma<256, 8, 4, 4, kO>(),     mma<128, 8, 2, 4, kO>(),  mma<256, 8, 2, 8, kO>(),
                            scalar<256, 2, 1, 2, kO>()};
  std::vector<QConfig> gu = {mma<128, 16, 1, 4, kGateUp>(), mma<256, 8, 2, 4, kGateUp>(), mma<128, 8, 4, 2, kGateUp>(),
                             mma<256, 8, 4, 4, kGateUp>(),  mma<128, 16, 2, 4, kGateUp>(), mma<128, 8, 1, 4, kGateUp>(),
                             scalar<256, 1, 2, 1, kGateUp>()};
  std::vector<QConfig> down = {mma<256, 8, 4, 4, kDown>(), mma<128, 8, 4, 4, kDown>(), mma<256, 8, 2, 8, kDown>(),
                               mma<256, 16, 2, 8, kDown>(), scalar<256, 2, 2, 2, kDown>()};
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("%d SMs\n", sms);
  struct Shape {
    const char* name;
    int kind, rows, out_cols, K;
    std::vector<QConfig>* configs;
  };
  std::vector<Shape> shapes = {{"qkv", kQkv, QKV, QKV, H, &qkv},
                               {"o_proj", kO, H, H, H, &o},
                               {"gate_up", kGateUp, I, I, H, &gu},
                               {"down", kDown, H, H, I, &down}};

  // The layer: the first (selected) configuration of each shape, qkv -> stand-in -> o_proj -> gate/up
  // -> down, 28 layers in one graph. Modes: distinct weights per layer (DRAM); every layer on layer 0's
  // weights (25 MB: L2-resident, the chain's floor without DRAM); distinct weights with a second stream
  // in the graph that warms layer l+1's weights in L2 while layer l runs (after layer l-1's down).
  {
    cudaStream_t side;
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> events(LAYERS + 1);
    for (auto& ev : events) CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    const long long standin_cycles = std::getenv("QGEMV_STANDIN") ? std::atoll(std::getenv("QGEMV_STANDIN")) : 5000;
    const int prefetch_blocks = std::getenv("QGEMV_PREFETCH_BLOCKS") ? std::atoi(std::getenv("QGEMV_PREFETCH_BLOCKS")) : 16;
    auto ranges_of = [&](const QLayer& l) {
      PrefetchRanges r{};
      const unsigned char* p[5] = {l.qkv, l.o, l.gate, l.up, l.down};
      const unsigned long long n[5] = {size_t{QKV} * row_bytes(H), size_t{H} * row_bytes(H), size_t{I} * row_bytes(H), size_t{I} * row_bytes(H),
                                       size_t{H} * row_bytes(I)};
      for (int s = 0; s < 5; ++s) r.p[s] = p[s], r.n[s] = n[s];
      return r;
    };
    double layer_bytes = 0;
    for (const Shape& s : shapes) layer_bytes += double(s.kind == kGateUp ? 2 : 1) * s.rows * row_bytes(s.K);
    for (long long cycles : {0LL, standin_cycles})
      for (int mode = 0; mode < 4; ++mode) {
        // mode 0: distinct weights; 1: one layer's weights; 2: distinct + warming the next layer; 3: + warming two ahead
        const double us = time_graph(stream, [&] {
          if (mode >= 2) {
            CHECK(cudaEventRecord(events[LAYERS], stream));
            CHECK(cudaStreamWaitEvent(side, events[LAYERS]));
            prefetch_l2<<<prefetch_blocks, 128, 0, side>>>(ranges_of(layers[0]));
            if (mode == 3) prefetch_l2<<<prefetch_blocks, 128, 0, side>>>(ranges_of(layers[1]));
          }
          for (int li = 0; li < LAYERS; ++li) {
            const QLayer& l = layers[mode == 1 ? 0 : li];
            const int ahead = mode == 3 ? 2 : 1;
            if (mode >= 2 && li + ahead < LAYERS) {
              CHECK(cudaEventRecord(events[li], stream));
              CHECK(cudaStreamWaitEvent(side, events[li]));
              prefetch_l2<<<prefetch_blocks, 128, 0, side>>>(ranges_of(layers[li + ahead]));
            }
            launch_q(qkv.front(), ptrs(kQkv, l, out), QKV);
            if (cycles > 0) launch_programmatic(attention_standin, dim3(64), dim3(256), 0, stream, static_cast<const __half*>(out), attn, cycles);
            launch_q(o.front(), ptrs(kO, l, h2), H);
            launch_q(gu.front(), ptrs(kGateUp, l, act), I);
            launch_q(down.front(), ptrs(kDown, l, out), H);
          }
          if (mode >= 2) {
            CHECK(cudaEventRecord(events[LAYERS], side));
            CHECK(cudaStreamWaitEvent(stream, events[LAYERS]));
          }
        }) / LAYERS;
        static const char* names[4] = {"distinct weights", "one layer's weights (L2)", "distinct + warm next layer", "distinct + warm 2 ahead"};
        std::printf("layer chain, stand-in %5lld cycles, %-28s: %6.2f us/layer, %.2f TB/s of int4 bytes\n", cycles, names[mode], us,
                    layer_bytes / us * 1e-6);
      }
  }
  int failures = 0;
  const bool ncu_only = std::getenv("QGEMV_NCU") != nullptr;  // one launch of each, for the profiler
  if (std::getenv("QGEMV_LAYER_ONLY")) return 0;
  for (const Shape& s : shapes) {
    const double bytes = double(s.kind == kGateUp ? 2 : 1) * s.rows * row_bytes(s.K);
    launch_q(s.configs->front(), ptrs(s.kind, layers[0], check), s.rows);
    CHECK(cudaStreamSynchronize(stream));
    const std::vector<__half> want = download(check, s.out_cols);
    for (const QConfig& c : *s.configs) {
      if (ncu_only) {
        launch_q(c, ptrs(s.kind, layers[1], out), s.rows);
        CHECK(cudaStreamSynchronize(stream));
        continue;
      }
      CHECK(cudaMemset(out, 0xff, s.out_cols * sizeof(__half)));  // NaN: a row left unwritten shows
      launch_q(c, ptrs(s.kind, layers[0], out), s.rows);
      CHECK(cudaStreamSynchronize(stream));
      const double rel = max_rel_error(want, download(out, s.out_cols));
      failures += rel < 2e-2 ? 0 : 1;
      cudaFuncAttributes fa;
      CHECK(cudaFuncGetAttributes(&fa, c.kernel));
      int per_sm = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c.kernel, c.threads, 0));
      const double us = time_graph(stream, [&] {
        for (const auto& l : layers) launch_q(c, ptrs(s.kind, l, out), s.rows);
      }) / LAYERS;
      std::printf("%-8s %-22s grid %4d, %3d regs, %d/SM: %6.2f us, %.2f TB/s (int4 bytes), max err %.1e%s\n", s.name, c.name.c_str(),
                  (s.rows + c.rows_per_block - 1) / c.rows_per_block, fa.numRegs, per_sm, us, bytes / us * 1e-6, rel,
                  rel < 2e-2 ? "" : "  WRONG");
    }
  }
  if (ncu_only) return 0;
  std::printf("%s\n", failures ? "FAILED: some configuration differs from the selected one" : "all configurations agree");
  return failures ? 1 : 0;
}
