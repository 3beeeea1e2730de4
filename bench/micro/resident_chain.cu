// Does holding a small GEMV's whole weight slice in shared memory pay in the decode layer?
// The register GEMVs (gemv.cuh) issue one batch of weight loads before their producer wait, and at two
// blocks per SM their registers keep the next kernel's blocks off the SMs, so during the decode
// attention (a few µs of latency with almost no DRAM traffic) little of the following weights is in
// flight. A "resident" GEMV copies its block's rows whole into shared memory with bulk copies before
// its wait and needs few registers, so the kernel after it can be resident and load early too.
// The chain per layer: QKV -> attention stand-in -> o_proj -> gate/up -> down, 28 layers of distinct
// weights in one CUDA graph. The stand-in holds its SMs for a fixed number of cycles after its wait
// (the attention's latency) and lets the next kernel launch either after its wait (as the attention
// does now) or before it.
// Results (slower in every arrangement; run with the constant weights, DECODE_CHAIN_CONSTANT=1):
// bench/results/2026-11-24-h200/decode-round9/micro/resident.txt.
//   nvcc -O3 -std=c++20 --use_fast_math -arch=sm_90a -Isrc/kernels -Ibench/micro bench/micro/resident_chain.cu -o resident_chain
#include <cstdint>

#include "decode_chain.cuh"

// --- mbarrier and bulk copies (sm_90) ----------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(ac::smem_u32(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(ac::smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n wait_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra wait_%=;\n}\n" ::"r"(ac::smem_u32(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(ac::smem_u32(dst)),
               "l"(src), "r"(bytes), "r"(ac::smem_u32(bar))
               : "memory");
}

// One block holds rows [row0, row0 + ROWS) of the (segmented) weight whole in shared memory.
template <int THREADS, int ROWS, int KIND>
__global__ void __launch_bounds__(THREADS) resident_kernel(const Ptrs a) {
  constexpr int K = H;  // QKV and o_proj
  constexpr bool kNorm = KIND == kQkv;
  extern __shared__ __align__(128) unsigned char smem[];
  __half* ws = reinterpret_cast<__half*>(smem);  // [ROWS][K]
  __shared__ __align__(16) __half xs[K];
  __shared__ __align__(8) uint64_t bar;
  P p;
  p.x = a.x;
  p.norm_w = a.norm_w;
  p.norm_eps = 1e-6f;
  p.residual = a.residual;
  p.K = K;
  const int rows[3] = {H, KIND == kQkv ? KVD : 0, KIND == kQkv ? KVD : 0};
  const int total = rows[0] + rows[1] + rows[2];
  const int row0 = blockIdx.x * ROWS;
  const int nrows = min(ROWS, total - row0);
  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    mbar_expect_tx(&bar, nrows * K * 2);
    for (int r = 0; r < nrows; ++r) {
      int row = row0 + r;
      const int seg = ac::gemv_segment(rows, row);
      bulk_copy(ws + r * K, a.w[seg] + static_cast<size_t>(row) * K, K * 2, &bar);
    }
  }
  ac::GemvNormWeights<__half, THREADS, K> nw;
  if (kNorm) ac::load_norm_weights<__half, __half, THREADS, K>(p, nw);
  ac::launch_dependent_grids();
  ac::wait_for_producer_grid();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kWarps = THREADS / 32;
  float residual_v[(ROWS + kWarps - 1) / kWarps];
#pragma unroll
  for (int i = 0; i < (ROWS + kWarps - 1) / kWarps; ++i) {
    const int r = warp + i * kWarps;
    residual_v[i] = KIND == kO && lane == 0 && r < nrows ? __half2float(a.residual[row0 + r]) : 0.f;
  }
  ac::gemv_stage_x<__half, __half, THREADS, K, kNorm>(p, nw, xs);
  mbar_wait(&bar, 0);
#pragma unroll
  for (int i = 0; i < (ROWS + kWarps - 1) / kWarps; ++i) {
    const int r = warp + i * kWarps;
    if (r >= nrows) break;
    float acc = 0.f;
#pragma unroll
    for (int k = lane * 8; k < K; k += 256) {
      float wf[8], xf[8];
      ac::unpack8<__half>(*reinterpret_cast<const uint4*>(ws + r * K + k), wf);
      ac::unpack8<__half>(*reinterpret_cast<const uint4*>(xs + k), xf);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc = fmaf(wf[e], xf[e], acc);
    }
    acc = ac::warp_sum(acc);
    if (lane == 0) {
      int row = row0 + r;
      const int seg = ac::gemv_segment(rows, row);
      a.y[seg][row] = __float2half_rn(acc + residual_v[i]);
    }
  }
}

template <int THREADS, int ROWS, int KIND>
Config resident() {
  char name[64];
  std::snprintf(name, sizeof name, "resident_t%d_r%d", THREADS, ROWS);
  Config c{name, resident_kernel<THREADS, ROWS, KIND>, THREADS, ROWS, ROWS * H * 2};
  CHECK(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, c.shared_bytes));
  return c;
}

// The attention stand-in: 64 blocks that read the query, hold their SM for `cycles` and write.
template <bool EARLY_TRIGGER>
__global__ void __launch_bounds__(256) attention_standin(const __half* q, __half* out, long long cycles) {
  if (EARLY_TRIGGER) ac::launch_dependent_grids();
  ac::wait_for_producer_grid();
  if (!EARLY_TRIGGER) ac::launch_dependent_grids();
  const int i = blockIdx.x * 256 + threadIdx.x;
  float v = __half2float(q[i % (H + 2 * KVD)]);
  const long long start = clock64();
  while (clock64() - start < cycles) v = v * 0.999f + 1e-3f;
  if (i < H) out[i] = __float2half_rn(v);
}

void launch_standin(bool early, const __half* q, __half* out, long long cycles, cudaStream_t stream) {
  if (early)
    launch_programmatic(attention_standin<true>, dim3(64), dim3(256), 0, stream, q, out, cycles);
  else
    launch_programmatic(attention_standin<false>, dim3(64), dim3(256), 0, stream, q, out, cycles);
}

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<LayerWeights> layers = alloc_layers();
  const Activations act;
  __half *q = act.q, *attn = act.attn;

  // The picks of one compile (decode-round8), the descent's, and resident forms.
  const Config qkv_reg = config<128, 2, 4, 1, kQkv>(), o_reg = config<256, 4, 2, 4, kO>(), gu = config<128, 1, 4, 1, kGateUp>(),
               down = config<256, 2, 4, 2, kDown>();
  const std::vector<Config> qkv_forms = {qkv_reg, resident<256, 32, kQkv>(), resident<256, 16, kQkv>(), resident<128, 16, kQkv>()};
  const std::vector<Config> o_forms = {o_reg, resident<256, 16, kO>(), resident<256, 8, kO>(), resident<128, 8, kO>()};
  for (const auto& c : {qkv_forms[1], qkv_forms[2], qkv_forms[3], o_forms[1], o_forms[2], o_forms[3]}) {
    cudaFuncAttributes fa;
    CHECK(cudaFuncGetAttributes(&fa, c.kernel));
    std::printf("%-20s %3d regs, %6d B dynamic shared\n", c.name.c_str(), fa.numRegs, c.shared_bytes);
  }
  const double layer_bytes = 2.0 * (double(QKV) * H + double(H) * H + 2.0 * I * H + double(H) * I);
  for (long long cycles : {0ll, 4000ll, 8000ll}) {
    for (bool early : {false, true}) {
      for (const auto& cq : qkv_forms)
        for (const auto& co : o_forms) {
          const double us = time_graph(stream, [&] {
            for (const auto& l : layers) {
              launch(cq, act.qkv(l), QKV, stream);
              launch_standin(early, q, attn, cycles, stream);
              launch(co, act.o(l), H, stream);
              launch(gu, act.gate_up(l), I, stream);
              launch(down, act.down(l), H, stream);
            }
          }) / LAYERS;
          std::printf("stand-in %5lld cycles, trigger %-6s qkv %-20s o_proj %-20s: %6.2f us/layer (%.2f TB/s)\n", cycles,
                      early ? "early" : "late", cq.name.c_str(), co.name.c_str(), us, layer_bytes / us * 1e-6);
        }
    }
  }
  return 0;
}
