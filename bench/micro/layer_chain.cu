// A Qwen3-1.7B decode layer as the compiler emits it at short context, outside the compiler: the
// QKV GEMV (RMSNorm prologue), the cluster decode attention (QK-norm, RoPE and KV append in its
// prologue; 16 blocks per kv head), o_proj with the residual, gate/up (RMSNorm prologue, SiLU·mul)
// and down with the residual; 28 layers of distinct weights and caches in one CUDA graph, every
// launch programmatic. Which attention shape (threads, unroll, blocks per cluster) and o_proj form
// make the cheapest layer at a given position (the first argument). Results:
// bench/results/2026-11-24-h200/decode-round9/.
//   nvcc -O3 -std=c++20 --use_fast_math -arch=sm_90a -Isrc/kernels -Ibench/micro bench/micro/layer_chain.cu -o layer_chain
#include "attention_decode.cuh"
#include "decode_chain.cuh"

constexpr int NH = 16, KVH = 8, D = 128, CACHE_ROWS = 4096;

template <int THREADS, int UNROLL, int SPLITS>
__global__ void __launch_bounds__(THREADS) __cluster_dims__(SPLITS, 1, 1) attention_kernel(const ac::AttentionDecodeParams<__half> p) {
  ac::attention_decode_split<__half, D, KVH, NH / KVH, THREADS, UNROLL, false, 16, SPLITS, true, true>(p);
}

struct Attention {
  std::string name;
  void (*kernel)(ac::AttentionDecodeParams<__half>);
  int threads, splits;
};

template <int THREADS, int UNROLL, int SPLITS>
Attention attention() {
  char name[64];
  std::snprintf(name, sizeof name, "t%d_u%d_s%d", THREADS, UNROLL, SPLITS);
  Attention a{name, attention_kernel<THREADS, UNROLL, SPLITS>, THREADS, SPLITS};
  if (SPLITS > 8) CHECK(cudaFuncSetAttribute(a.kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  return a;
}

void launch_attention(const Attention& a, const ac::AttentionDecodeParams<__half>& p, cudaStream_t stream) {
  launch_programmatic(a.kernel, dim3(a.splits, KVH), dim3(a.threads), 0, stream, p);
}

int main(int argc, char** argv) {
  const int position = argc > 1 ? std::atoi(argv[1]) : 200;
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<LayerWeights> layers = alloc_layers();
  struct AttentionState {
    __half *q_norm, *k_norm, *k_cache, *v_cache;
  };
  std::vector<AttentionState> attention_state(LAYERS);
  for (auto& l : attention_state) {
    l.q_norm = alloc(D);
    l.k_norm = alloc(D);
    l.k_cache = alloc(size_t{CACHE_ROWS} * KVH * D);
    l.v_cache = alloc(size_t{CACHE_ROWS} * KVH * D);
  }
  const Activations act;
  int* pos;
  CHECK(cudaMalloc(&pos, sizeof(int)));
  CHECK(cudaMemcpy(pos, &position, sizeof(int), cudaMemcpyHostToDevice));
  float* inv_freq;
  std::vector<float> freqs(D / 2);
  for (int i = 0; i < D / 2; ++i) freqs[i] = std::pow(1.0e6f, -2.0f * i / D);
  CHECK(cudaMalloc(&inv_freq, sizeof(float) * D / 2));
  CHECK(cudaMemcpy(inv_freq, freqs.data(), sizeof(float) * D / 2, cudaMemcpyHostToDevice));

  auto attention_params = [&](const AttentionState& l) {
    ac::AttentionDecodeParams<__half> p = {};
    p.q = act.q;
    p.k = l.k_cache;
    p.v = l.v_cache;
    p.pos = pos;
    p.out = act.attn;
    p.scale_log2 = 0.08838834764f * 1.44269504f;
    p.L = CACHE_ROWS;
    p.k_new = act.q + H;
    p.v_new = act.q + H + KVD;
    p.q_norm = l.q_norm;
    p.k_norm = l.k_norm;
    p.inv_freq = inv_freq;
    p.norm_eps = 1e-6f;
    p.k_cache = l.k_cache;
    p.v_cache = l.v_cache;
    return p;
  };
  Config qkv = config<128, 2, 4, 1, kQkv>();
  const Config gu = config<128, 1, 4, 1, kGateUp>(), down = config<256, 2, 4, 2, kDown>();
  const std::vector<Config> o_forms = {config<256, 4, 2, 4, kO>(), config<256, 2, 4, 2, kO>(), config<256, 2, 4, 1, kO>(),
                                       config<256, 2, 2, 1, kO>(), config<256, 4, 2, 2, kO>(), config<256, 1, 4, 1, kO>()};
  const std::vector<Attention> attention_forms = {
      attention<256, 4, 4>(),     attention<256, 4, 16>(),    attention<128, 4, 16>(),    attention<128, 2, 16>(),    attention<256, 4, 8>(),     attention<128, 4, 8>(),
      attention<512, 4, 8>(),     attention<256, 4, 4>(),     attention<512, 4, 4>(),     attention<512, 4, 2>()};
  const double layer_bytes = 2.0 * (double(QKV) * H + double(H) * H + 2.0 * I * H + double(H) * I);
  std::printf("position %d (keys 0..%d)\n", position, position);
  auto layer_time = [&](const Attention* at, const Config& co, int graphs = 1) {
    return time_graph(stream, [&] {
      for (int i = 0; i < LAYERS / graphs; ++i) {
        const LayerWeights& l = layers[i];
        launch(qkv, act.qkv(l), QKV, stream);
        if (at) launch_attention(*at, attention_params(attention_state[i]), stream);
        launch(co, act.o(l), H, stream);
        launch(gu, act.gate_up(l), I, stream);
        launch(down, act.down(l), H, stream);
      }
    }, 30, graphs) / LAYERS;
  };
  // What a graph boundary costs: the 28 layers as one graph, or as 2, 4 or 7 graphs launched back to
  // back (a decode step is one graph launch; the next step's first kernel cannot start early).
  {
    const Attention& at = attention_forms[0];
    const double one = layer_time(&at, o_forms[0], 1) * LAYERS;
    for (int graphs : {2, 4, 7})
      std::printf("28 layers as %d graphs: %.2f us more than as one (%.2f us per graph boundary)\n", graphs,
                  layer_time(&at, o_forms[0], graphs) * LAYERS - one, (layer_time(&at, o_forms[0], graphs) * LAYERS - one) / (graphs - 1));
  }
  // The QKV and o_proj forms together, with the 4-block clusters at this position.
  const std::vector<Config> qkv_forms = {config<256, 1, 4, 1, kQkv>(), config<256, 2, 4, 1, kQkv>(), config<128, 2, 4, 1, kQkv>()};
  for (const auto& cq : qkv_forms) {
    qkv = cq;
    for (const auto& co : o_forms)
      std::printf("qkv %-14s o_proj %-14s attention %-12s %6.2f us/layer\n", cq.name.c_str(), co.name.c_str(), attention_forms[0].name.c_str(),
                  layer_time(&attention_forms[0], co));
  }
  qkv = qkv_forms[2];
  if (std::getenv("LAYER_CHAIN_PAIRS_ONLY")) return 0;
  for (const auto& co : o_forms) {
    const double gemvs = layer_time(nullptr, co);
    std::printf("o_proj %-14s GEMVs only: %6.2f us/layer (%.2f TB/s)\n", co.name.c_str(), gemvs, layer_bytes / gemvs * 1e-6);
    for (const auto& at : attention_forms) {
      const double us = layer_time(&at, co);
      std::printf("o_proj %-14s attention %-20s %6.2f us/layer (attention adds %5.2f us)\n", co.name.c_str(), at.name.c_str(), us, us - gemvs);
    }
  }
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(stream));
  return 0;
}
