// decode_batch's matmuls on the GPU, outside the compiler: Qwen3-1.7B's four decode GEMV shapes at 1, 8
// and 16 tokens a step, each configuration launched over 28 layers of distinct weights in a CUDA graph
// with programmatic dependent launch (as the runtime replays a step). The question: how much of the
// batched GEMV's cost at 16 tokens is x's L2 round trip at the start of every batch of steps, and what
// loading it into registers a batch ahead (gemv_batch.cuh's X_AHEAD, a2 in the names) gives. (The a1
// configurations of bench/results/2026-11-28-h200/session10/gemv-batch-chain/x-ahead.txt prefetched it
// into L1 instead; that mode was removed from the kernel, and with it from this list.) The first
// configuration of each shape is what the compiler selected for Qwen3-1.7B on an H200
// (bench/results/2026-11-27-h200/session6/serve-batch-warm/decode-batch-report.md); every other one is
// checked against its output.
//   nvcc -O3 -std=c++20 --use_fast_math -gencode arch=compute_90a,code=sm_90a -Isrc/kernels \
//        bench/micro/gemv_batch_chain.cu -o gemv_batch_chain && ./gemv_batch_chain
#include "decode_chain.cuh"
#include "gemv_batch.cuh"

#include <cmath>

using BP = ac::GemvBatchParams<__half, __half>;

struct BatchPtrs {
  const __half *x, *residual, *w[3];
  __half* y[3];
  int tokens;
};

template <int THREADS, int MT, int NT, int UNROLL, int SPLIT, int XA, int KIND>
__global__ void __launch_bounds__(THREADS) gemv_batch_kernel(const BatchPtrs a) {
  BP p;
  bind_shape<KIND>(p, a);
  p.tokens = a.tokens;
  ac::gemv_batch<__half, __half, THREADS, MT, NT, UNROLL, SPLIT, kEpilogueOf<KIND>, ac::kActSilu, XA>(p);
}

struct BatchConfig {
  std::string name;
  void (*kernel)(BatchPtrs);
  int threads, rows_per_block, token_tile;
};

template <int THREADS, int MT, int NT, int UNROLL, int SPLIT, int XA, int KIND>
BatchConfig batch_config() {
  char name[64];
  std::snprintf(name, sizeof name, "t%d_m%d_x%d_u%d_s%d_a%d", THREADS, MT, NT, UNROLL, SPLIT, XA);
  return {name, gemv_batch_kernel<THREADS, MT, NT, UNROLL, SPLIT, XA, KIND>, THREADS, THREADS / 32 / SPLIT * 16 * MT, 8 * NT};
}

void launch_batch(const BatchConfig& c, const BatchPtrs& p, int total_rows, cudaStream_t stream) {
  const int row_blocks = (total_rows + c.rows_per_block - 1) / c.rows_per_block;
  cudaLaunchConfig_t lc = {};
  lc.gridDim = dim3(row_blocks, (p.tokens + c.token_tile - 1) / c.token_tile);
  lc.blockDim = dim3(c.threads);
  lc.stream = stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  lc.attrs = &attr;
  lc.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&lc, c.kernel, p));
}

constexpr int kMaxTokens = 16;

// Activations of up to 16 tokens, shared by every layer.
struct BatchActivations {
  __half *h = alloc(size_t{kMaxTokens} * H), *q = alloc(size_t{kMaxTokens} * QKV), *attn = alloc(size_t{kMaxTokens} * H),
         *h2 = alloc(size_t{kMaxTokens} * H), *act = alloc(size_t{kMaxTokens} * I), *out = alloc(size_t{kMaxTokens} * (I > QKV ? I : QKV));
  // Each shape reads its own input and writes `out` (so configurations can be compared on one output).
  BatchPtrs of(int kind, const LayerWeights& l, int tokens, __half* y) const {
    switch (kind) {
      case kQkv:
        return {h, nullptr, {l.qkv_w, l.qkv_w + size_t{H} * H, l.qkv_w + size_t{H + KVD} * H}, {y, y + static_cast<size_t>(tokens) * H, y + static_cast<size_t>(tokens) * (H + KVD)}, tokens};
      case kO: return {attn, h, {l.o_w, nullptr, nullptr}, {y, nullptr, nullptr}, tokens};
      case kGateUp: return {h2, nullptr, {l.gate_w, l.up_w, nullptr}, {y, nullptr, nullptr}, tokens};
      default: return {act, h2, {l.down_w, nullptr, nullptr}, {y, nullptr, nullptr}, tokens};
    }
  }
};

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<LayerWeights> layers = alloc_layers();
  const BatchActivations act;
  __half* check = alloc(size_t{kMaxTokens} * (I > QKV ? I : QKV));

  // The selected configurations first (decode-batch-report.md: the b9-16 pick, then b1-b8's), then the same
  // with x a batch ahead (a2), then others.
  std::vector<BatchConfig> qkv = {batch_config<256, 1, 2, 4, 4, 0, kQkv>(), batch_config<256, 1, 1, 4, 8, 0, kQkv>(),
                                  batch_config<256, 1, 2, 4, 4, 2, kQkv>(), batch_config<256, 1, 1, 4, 8, 2, kQkv>(),
                                  batch_config<256, 1, 2, 4, 8, 2, kQkv>(), batch_config<256, 1, 2, 2, 8, 2, kQkv>(),
                                  batch_config<128, 1, 2, 4, 4, 2, kQkv>()};
  std::vector<BatchConfig> o = {batch_config<256, 1, 1, 4, 8, 0, kO>(), batch_config<256, 1, 2, 4, 8, 0, kO>(),
                                batch_config<256, 1, 1, 4, 8, 2, kO>(), batch_config<256, 1, 2, 4, 8, 2, kO>(),
                                batch_config<256, 1, 2, 2, 8, 2, kO>(), batch_config<128, 1, 2, 4, 4, 2, kO>(),
                                batch_config<512, 1, 2, 2, 16, 2, kO>()};
  std::vector<BatchConfig> gu = {batch_config<128, 1, 2, 2, 4, 0, kGateUp>(), batch_config<128, 1, 2, 2, 4, 2, kGateUp>(),
                                 batch_config<256, 1, 2, 2, 8, 2, kGateUp>(), batch_config<128, 1, 2, 1, 4, 2, kGateUp>(),
                                 batch_config<256, 1, 2, 2, 4, 2, kGateUp>(), batch_config<128, 1, 2, 2, 2, 2, kGateUp>()};
  std::vector<BatchConfig> down = {batch_config<256, 1, 2, 4, 8, 0, kDown>(), batch_config<256, 1, 1, 4, 8, 0, kDown>(),
                                   batch_config<256, 1, 2, 4, 8, 2, kDown>(), batch_config<256, 1, 1, 4, 8, 2, kDown>(),
                                   batch_config<256, 1, 2, 2, 8, 2, kDown>(), batch_config<512, 1, 2, 2, 16, 2, kDown>(),
                                   batch_config<256, 1, 2, 4, 4, 2, kDown>()};

  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("%d SMs\n", sms);
  struct Shape {
    const char* name;
    int kind, rows, out_cols;
    double weight_bytes;
    std::vector<BatchConfig>* configs;
  };
  std::vector<Shape> shapes = {{"qkv", kQkv, QKV, QKV, 2.0 * QKV * H, &qkv},
                               {"o_proj", kO, H, H, 2.0 * H * H, &o},
                               {"gate_up", kGateUp, I, I, 4.0 * I * H, &gu},
                               {"down", kDown, H, H, 2.0 * H * I, &down}};
  int failures = 0;
  for (int tokens : {1, 8, 16}) {
    for (const Shape& s : shapes) {
      // Reference output: the first (selected) configuration on layer 0.
      const size_t out_elems = static_cast<size_t>(tokens) * s.out_cols;
      launch_batch(s.configs->front(), act.of(s.kind, layers[0], tokens, check), s.rows, stream);
      CHECK(cudaStreamSynchronize(stream));
      const std::vector<__half> want = download(check, out_elems);
      for (const BatchConfig& c : *s.configs) {
        CHECK(cudaMemset(act.out, 0xff, out_elems * sizeof(__half)));  // NaN: a row left unwritten shows
        launch_batch(c, act.of(s.kind, layers[0], tokens, act.out), s.rows, stream);
        CHECK(cudaStreamSynchronize(stream));
        const double rel = max_rel_error(want, download(act.out, out_elems));
        const bool ok = rel < 2e-2;
        failures += ok ? 0 : 1;
        cudaFuncAttributes fa;
        CHECK(cudaFuncGetAttributes(&fa, c.kernel));
        const double us = time_graph(stream, [&] {
          for (const auto& l : layers) launch_batch(c, act.of(s.kind, l, tokens, act.out), s.rows, stream);
        }) / LAYERS;
        std::printf("T=%-2d %-8s %-22s grid %4d x %d, %3d regs, %5d B smem: %6.2f us, %.2f TB/s, max err %.1e%s\n", tokens, s.name,
                    c.name.c_str(), (s.rows + c.rows_per_block - 1) / c.rows_per_block, (tokens + c.token_tile - 1) / c.token_tile,
                    fa.numRegs, static_cast<int>(fa.sharedSizeBytes), us, s.weight_bytes / us * 1e-6, rel, ok ? "" : "  WRONG");
      }
    }
  }
  std::printf("%s\n", failures ? "FAILED: some configuration differs from the selected one" : "all configurations agree");
  return failures ? 1 : 0;
}
