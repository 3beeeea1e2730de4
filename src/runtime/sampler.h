// The device sampler (src/kernels/sampling.cuh): compiled with the model's kernels at compile time
// and loaded from the artifact's cubin (emit::kSamplerKernel), with its state (position and step
// counters, next-token slot, history, the repetition-penalty mask, the argmax slot, the count of blocks
// done) in device memory and its token ring in mapped pinned host memory. Two argument blocks live on the device, one for the token after prefill and one for the
// decode step, so the decode graph is captured once and new sampling settings need only a copy.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "agentcompile/engine.h"
#include "agentcompile/status.h"
#include "gpu/cuda_driver.h"

namespace agentcompile::runtime {

class DeviceSampler {
 public:
  enum class Use { kDecode = 0, kPrefill = 1 };

  // `cubin`: the sampler kernel as the artifact holds it (LoadedArtifact::runtime_cubins).
  static Expected<std::unique_ptr<DeviceSampler>> create(int64_t vocab, int64_t history_capacity, const std::vector<char>& cubin);
  ~DeviceSampler();

  // Device scalars the IR functions read.
  CUdeviceptr next_token() const { return control_.ptr() + kNextToken; }
  CUdeviceptr position() const { return control_.ptr() + kPosition; }

  // Starts a sequence: position 0, no tokens generated, the penalty mask set to the prompt's tokens.
  Status reset(std::span<const int32_t> prompt, const SamplingOptions& sampling);
  // Sets the device position (prefill chunks, teacher forcing) and the next input token.
  Status set_position(int64_t position);
  Status set_next_token(int32_t token);
  // Both in one copy (a batched server's lone decode row, every step).
  Status set_next_token_at(int32_t token, int64_t position);
  // Where `use` reads its logits and how many positions the producing call consumed.
  Status configure(Use use, CUdeviceptr logits, int advance);
  // Enqueues the sampling launch for `use` (capturable); `programmatic`: with programmatic
  // dependent launch, as the decode step's kernels are.
  Status enqueue(Use use, CUstream stream, bool programmatic = false);
  // Token of step `step`, once the work that produced it has completed.
  int32_t token_of_step(int64_t step) const;
  static constexpr int64_t kRing = 4096;
  static constexpr int kLaunches = 1;

 private:
  DeviceSampler() = default;
  static constexpr size_t kNextToken = 0, kPosition = 4, kStep = 8, kArgmaxSlot = 16, kBlocksDone = 24, kControlBytes = 32;
  static constexpr unsigned kThreads = 1024;  // ac::kSampleThreads: the last block samples with all of them
  // One block per SM of an H100/H200 at most; on an H200, 32 blocks decode as fast as 132 and 8 are
  // 3 us per token slower (decode-round11/call5-sampler-launch.txt).
  static constexpr int64_t kMaxBlocks = 132;
  int64_t vocab_ = 0, history_capacity_ = 0;
  std::unique_ptr<gpu::CudaModule> module_;
  CUfunction kernel_ = nullptr;
  int blocks_ = 1;
  gpu::DeviceBuffer control_;   // next token, position, step, argmax slot, blocks done
  gpu::DeviceBuffer history_;   // [history_capacity] i32
  gpu::DeviceBuffer seen_;      // [vocab] u8
  gpu::DeviceBuffer args_;      // two SamplerArgs blocks
  int32_t* host_ring_ = nullptr;
  CUdeviceptr host_ring_device_ = 0;
  SamplingOptions sampling_;
  CUdeviceptr logits_[2] = {0, 0};
  int advance_[2] = {1, 1};
  Status upload_args(Use use);
};

}  // namespace agentcompile::runtime
