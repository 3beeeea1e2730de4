// Shared by the decode-chain micro-benchmarks (gemv_chain.cu, resident_chain.cu): Qwen3-1.7B's decode
// GEMV shapes, a wrapper that folds them to constants as agentcompile's generated kernels do, launches
// with programmatic dependent launch, and graph timing.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common.cuh"
#include "gemv.cuh"

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e = (x);                                                                      \
    if (e != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

using P = ac::GemvParams<__half, __half>;

// The kernel's pointers; shapes are compile-time constants, as in agentcompile's generated wrappers
// (whose constant segment sizes let the compiler drop the unused segments' code and registers).
struct Ptrs {
  const __half *x, *norm_w, *residual, *w[3];
  __half* y[3];
};

constexpr int H = 2048, I = 6144, QKV = 4096, KVD = 1024, LAYERS = 28;
enum Kind { kQkv, kO, kGateUp, kDown };

// The shape of KIND into a GEMV's parameters (GemvParams or GemvBatchParams: the same field names), from a
// pointer set with x, residual, w[3] and y[3]: the segments it uses, their rows and K.
template <int KIND, typename Params, typename Pointers>
__device__ __forceinline__ void bind_shape(Params& p, const Pointers& a) {
  p.x = a.x;
  p.residual = KIND == kO || KIND == kDown ? a.residual : nullptr;
  p.w[0] = a.w[0];
  p.w[1] = KIND == kQkv || KIND == kGateUp ? a.w[1] : nullptr;
  p.w[2] = KIND == kQkv ? a.w[2] : nullptr;
  p.bias[0] = p.bias[1] = p.bias[2] = nullptr;
  p.y[0] = a.y[0];
  p.y[1] = KIND == kQkv ? a.y[1] : nullptr;
  p.y[2] = KIND == kQkv ? a.y[2] : nullptr;
  p.rows[0] = KIND == kQkv ? H : KIND == kGateUp ? I : H;
  p.rows[1] = KIND == kQkv ? KVD : 0;
  p.rows[2] = KIND == kQkv ? KVD : 0;
  p.K = KIND == kDown ? I : H;
}
template <int KIND>
constexpr int kEpilogueOf = KIND == kQkv ? ac::kGemvPlain : KIND == kGateUp ? ac::kGemvGateUp : ac::kGemvResidual;

template <int THREADS, int ROWS, int UNROLL, int SPLIT, int KIND>
__global__ void __launch_bounds__(THREADS) gemv_kernel(const Ptrs a) {
  P p;
  bind_shape<KIND>(p, a);
  p.norm_w = KIND == kQkv || KIND == kGateUp ? a.norm_w : nullptr;
  p.norm_eps = 1e-6f;
  constexpr int epilogue = kEpilogueOf<KIND>;
  ac::gemv<__half, __half, THREADS, ROWS, UNROLL, SPLIT, epilogue, KIND == kDown ? I : H, KIND == kQkv || KIND == kGateUp>(p);
}

struct Config {
  std::string name;
  void (*kernel)(Ptrs);
  int threads, rows_per_block;
  int shared_bytes = 0;  // dynamic shared memory
};

int grid_of(const Config& c, int total_rows) { return (total_rows + c.rows_per_block - 1) / c.rows_per_block; }

template <int THREADS, int ROWS, int UNROLL, int SPLIT, int KIND>
Config config() {
  char name[64];
  std::snprintf(name, sizeof name, "t%d_r%d_u%d_s%d", THREADS, ROWS, UNROLL, SPLIT);
  return {name, gemv_kernel<THREADS, ROWS, UNROLL, SPLIT, KIND>, THREADS, THREADS / 32 / SPLIT * ROWS};
}

// Launches `kernel` with programmatic stream serialization, as agentcompile's decode step does.
template <typename Kernel, typename... Args>
void launch_programmatic(Kernel kernel, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t lc = {};
  lc.gridDim = grid;
  lc.blockDim = block;
  lc.dynamicSmemBytes = shared_bytes;
  lc.stream = stream;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  lc.attrs = &attr;
  lc.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&lc, kernel, args...));
}

void launch(const Config& c, const Ptrs& p, int total_rows, cudaStream_t stream) {
  launch_programmatic(c.kernel, dim3(grid_of(c, total_rows)), dim3(c.threads), c.shared_bytes, stream, p);
}

// Median of `reps` timings of `launches` back-to-back replays of a graph holding `fn`'s launches,
// in microseconds.
double time_graph(cudaStream_t stream, const std::function<void()>& fn, int reps = 30, int launches = 1) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  fn();
  CHECK(cudaStreamEndCapture(stream, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int r = 0; r < reps + 3; ++r) {
    CHECK(cudaEventRecord(a, stream));
    for (int l = 0; l < launches; ++l) CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(b, stream));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    if (r >= 3) t.push_back(ms * 1000.0);
  }
  std::sort(t.begin(), t.end());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return t[t.size() / 2];
}

// Fills with hashed values in about [-0.03, 0.03], or with DECODE_CHAIN_CONSTANT=1 the 0x1111 pattern
// every result before decode-round9/micro/layer-chain.txt's last section was taken with (the layer
// timings moved by 0.3 us between the two, the order of the forms did not).
__global__ void fill_random(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = __float2half_rn((static_cast<float>(h & 0xffff) / 65535.f - 0.5f) * 0.06f);
  }
}

__half* alloc(size_t elements) {
  static unsigned seed = 1;
  __half* p;
  CHECK(cudaMalloc(&p, elements * sizeof(__half)));
  CHECK(cudaMemset(p, 0x11, elements * sizeof(__half)));
  if (!std::getenv("DECODE_CHAIN_CONSTANT")) {
    fill_random<<<1024, 256>>>(p, elements, seed++ * 7919u);
    CHECK(cudaDeviceSynchronize());
  }
  return p;
}

// A device array of halves, copied to the host (to check a configuration against another).
std::vector<__half> download(const __half* p, size_t n) {
  std::vector<__half> v(n);
  CHECK(cudaMemcpy(v.data(), p, n * sizeof(__half), cudaMemcpyDeviceToHost));
  return v;
}

// The largest |got − want| over the largest |want| (infinite where got is not finite).
double max_rel_error(const std::vector<__half>& want, const std::vector<__half>& got) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double w = __half2float(want[i]), g = __half2float(got[i]);
    scale = std::max(scale, std::fabs(w));
    worst = std::isfinite(g) ? std::max(worst, std::fabs(g - w)) : INFINITY;
  }
  return worst / std::max(scale, 1e-6);
}

// One layer's GEMV weights, distinct per layer so a chain of layers streams them from DRAM.
struct LayerWeights {
  __half *qkv_w, *o_w, *gate_w, *up_w, *down_w, *norm1, *norm2;
};

std::vector<LayerWeights> alloc_layers() {
  std::vector<LayerWeights> layers(LAYERS);
  for (auto& l : layers) {
    l.qkv_w = alloc(size_t{QKV} * H);
    l.o_w = alloc(size_t{H} * H);
    l.gate_w = alloc(size_t{I} * H);
    l.up_w = alloc(size_t{I} * H);
    l.down_w = alloc(size_t{H} * I);
    l.norm1 = alloc(H);
    l.norm2 = alloc(H);
  }
  return layers;
}

// The activations every layer shares (as the runtime's arena gives every layer the same buffers) and
// each GEMV's arguments: h -> QKV (q) ... attention (attn) -> o_proj + h (h2) -> gate/up (act) -> down + h2 (h).
struct Activations {
  __half *h = alloc(H), *q = alloc(QKV), *attn = alloc(H), *h2 = alloc(H), *act = alloc(I);
  Ptrs qkv(const LayerWeights& l) const {
    return Ptrs{h, l.norm1, nullptr, {l.qkv_w, l.qkv_w + size_t{H} * H, l.qkv_w + size_t{H + KVD} * H}, {q, q + H, q + H + KVD}};
  }
  Ptrs o(const LayerWeights& l) const { return Ptrs{attn, nullptr, h, {l.o_w, nullptr, nullptr}, {h2, nullptr, nullptr}}; }
  Ptrs gate_up(const LayerWeights& l) const { return Ptrs{h2, l.norm2, nullptr, {l.gate_w, l.up_w, nullptr}, {act, nullptr, nullptr}}; }
  Ptrs down(const LayerWeights& l) const { return Ptrs{act, nullptr, h2, {l.down_w, nullptr, nullptr}, {h, nullptr, nullptr}}; }
};
