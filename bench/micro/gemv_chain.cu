// Decode GEMV chains on the GPU, outside the compiler: the question is how much of a GEMV's fixed
// cost comes from its grid filling every SM (the next kernel's blocks cannot be resident to issue
// their pre-wait weight loads until this grid drains) and what grids of about one block per SM do.
// Times (a) each configuration launched back to back with programmatic dependent launch, as the
// tuner does, and (b) a Qwen3-1.7B decode layer's four GEMVs (QKV, o_proj, gate/up, down) over 28
// layers of distinct weights, captured in a CUDA graph, from the picks of one compile and by coordinate
// descent over the alternatives (what pipeline/context_tune.cpp now does inside the compiler). Shapes
// are compile-time constants in the wrappers, as in the generated kernels, so register counts match
// NVRTC's. Results: bench/results/2026-11-24-h200/decode-round8/gemv-chain/.
//   nvcc -O3 -std=c++20 --use_fast_math -arch=sm_90a -Isrc/kernels bench/micro/gemv_chain.cu -o gemv_chain && ./gemv_chain
#include "decode_chain.cuh"

int main() {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<LayerWeights> layers = alloc_layers();
  const Activations act;
  auto qkv_params = [&](const LayerWeights& l) { return act.qkv(l); };
  auto o_params = [&](const LayerWeights& l) { return act.o(l); };
  auto gate_up_params = [&](const LayerWeights& l) { return act.gate_up(l); };
  auto down_params = [&](const LayerWeights& l) { return act.down(l); };

  std::vector<Config> qkv = {config<256, 1, 4, 1, kQkv>(), config<256, 2, 4, 1, kQkv>(), config<256, 4, 2, 1, kQkv>(),
                             config<256, 2, 2, 1, kQkv>(), config<128, 2, 4, 1, kQkv>()};
  std::vector<Config> o = {config<256, 4, 2, 4, kO>(), config<256, 2, 4, 2, kO>(), config<256, 2, 4, 1, kO>(),
                           config<256, 2, 2, 1, kO>(), config<256, 4, 2, 2, kO>(), config<256, 1, 4, 1, kO>()};
  std::vector<Config> gu = {config<256, 1, 2, 1, kGateUp>(), config<128, 1, 4, 1, kGateUp>(), config<256, 1, 4, 1, kGateUp>(),
                            config<256, 2, 2, 1, kGateUp>(), config<128, 2, 2, 1, kGateUp>()};
  std::vector<Config> down = {config<256, 2, 4, 2, kDown>(), config<256, 4, 2, 2, kDown>(), config<256, 2, 4, 1, kDown>(),
                              config<256, 4, 2, 4, kDown>(), config<256, 1, 4, 1, kDown>(), config<128, 2, 4, 1, kDown>()};

  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("%d SMs\n", sms);
  // (a) Self-chains over the 28 layers' weights: per launch and effective TB/s.
  auto chain = [&](const char* what, const std::vector<Config>& cs, auto params, int rows, double bytes) {
    for (const auto& c : cs) {
      cudaFuncAttributes fa;
      CHECK(cudaFuncGetAttributes(&fa, c.kernel));
      int per_sm = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, c.kernel, c.threads, 0));
      const double us = time_graph(stream, [&] {
        for (const auto& l : layers) launch(c, params(l), rows, stream);
      }) / LAYERS;
      std::printf("%-8s %-14s grid %4d, %3d regs, %d/SM: %6.2f us, %.2f TB/s\n", what, c.name.c_str(), (rows + c.rows_per_block - 1) / c.rows_per_block,
                  fa.numRegs, per_sm, us, bytes / us * 1e-6);
    }
  };
  chain("qkv", qkv, qkv_params, QKV, 2.0 * QKV * H);
  chain("o_proj", o, o_params, H, 2.0 * H * H);
  chain("gate_up", gu, gate_up_params, I, 4.0 * I * H);
  chain("down", down, down_params, H, 2.0 * H * I);

  // (b) The layer: QKV -> o_proj -> gate/up -> down, 28 times.
  auto layer_time = [&](const Config& cq, const Config& co, const Config& cg, const Config& cd) {
    return time_graph(stream, [&] {
      for (const auto& l : layers) {
        launch(cq, qkv_params(l), QKV, stream);
        launch(co, o_params(l), H, stream);
        launch(cg, gate_up_params(l), I, stream);
        launch(cd, down_params(l), H, stream);
      }
    }) / LAYERS;
  };
  const double layer_bytes = 2.0 * (double(QKV) * H + double(H) * H + 2.0 * I * H + double(H) * I);
  auto report = [&](const char* what, int iq, int io, int ig, int id) {
    const double us = layer_time(qkv[iq], o[io], gu[ig], down[id]);
    std::printf("layer %-28s %s %s %s %s: %6.2f us, %.2f TB/s\n", what, qkv[iq].name.c_str(), o[io].name.c_str(), gu[ig].name.c_str(),
                down[id].name.c_str(), us, layer_bytes / us * 1e-6);
  };
  // Coordinate descent from the tuner's picks of one compile (the first of each list), one region
  // at a time over its alternatives, then a second pass: what choosing in context is worth.
  int pick[4] = {0, 0, 0, 0};
  const std::vector<Config>* sets[4] = {&qkv, &o, &gu, &down};
  report("tuner's picks", 0, 0, 0, 0);
  for (int pass = 0; pass < 2; ++pass)
    for (int r = 0; r < 4; ++r) {
      double best = 1e30;
      int best_i = pick[r];
      for (int i = 0; i < static_cast<int>(sets[r]->size()); ++i) {
        int trial[4] = {pick[0], pick[1], pick[2], pick[3]};
        trial[r] = i;
        const double us = layer_time(qkv[trial[0]], o[trial[1]], gu[trial[2]], down[trial[3]]);
        if (us < best) best = us, best_i = i;
      }
      pick[r] = best_i;
      report(pass == 0 ? "descent, pass 1" : "descent, pass 2", pick[0], pick[1], pick[2], pick[3]);
    }
  return 0;
}
