// Host side of the device sampler.
#include "runtime/sampler.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "emit/artifact_record.h"
#include "gpu/driver_api.h"

namespace agentcompile::runtime {

namespace {

// Host mirror of ac::SamplerArgs (src/kernels/sampling.cuh).
struct SamplerArgs {
  CUdeviceptr logits, next_token, pos, step, history, host_ring, seen, argmax_slot, blocks_done;
  int32_t V, ring, history_capacity, advance;
  float temperature;
  int32_t top_k;
  float top_p, repetition_penalty;
  uint64_t seed;
};
static_assert(sizeof(SamplerArgs) == 112, "SamplerArgs must match ac::SamplerArgs");

const gpu::DriverApi& api() { return *gpu::driver_api(); }

}  // namespace

Expected<std::unique_ptr<DeviceSampler>> DeviceSampler::create(int64_t vocab, int64_t history_capacity, const std::vector<char>& cubin) {
  std::unique_ptr<DeviceSampler> s(new DeviceSampler());
  s->vocab_ = vocab;
  s->history_capacity_ = std::max<int64_t>(history_capacity, 1);
  AC_ASSIGN_OR_RETURN(s->module_, gpu::CudaModule::load(cubin, "the sampling kernel"));
  AC_ASSIGN_OR_RETURN(s->kernel_, s->module_->function(emit::kSamplerKernel.kernel));
  s->blocks_ = static_cast<int>(std::min<int64_t>(kMaxBlocks, (vocab + kThreads - 1) / kThreads));
  AC_ASSIGN_OR_RETURN(s->control_, gpu::DeviceBuffer::allocate(kControlBytes));
  AC_TRY(s->control_.fill_bytes(0));
  AC_ASSIGN_OR_RETURN(s->history_, gpu::DeviceBuffer::allocate(static_cast<size_t>(s->history_capacity_) * 4));
  AC_ASSIGN_OR_RETURN(s->seen_, gpu::DeviceBuffer::allocate(static_cast<size_t>(vocab)));
  AC_TRY(s->seen_.fill_bytes(0));
  AC_ASSIGN_OR_RETURN(s->args_, gpu::DeviceBuffer::allocate(2 * sizeof(SamplerArgs)));
  void* ring = nullptr;
  AC_CU(api().MemHostAlloc(&ring, kRing * sizeof(int32_t), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc(token ring)");
  s->host_ring_ = static_cast<int32_t*>(ring);
  std::memset(ring, 0xff, kRing * sizeof(int32_t));
  AC_CU(api().MemHostGetDevicePointer(&s->host_ring_device_, ring, 0), "cuMemHostGetDevicePointer(token ring)");
  AC_TRY(s->upload_args(Use::kDecode));
  AC_TRY(s->upload_args(Use::kPrefill));
  return s;
}

DeviceSampler::~DeviceSampler() {
  if (host_ring_) api().MemFreeHost(host_ring_);
}

Status DeviceSampler::upload_args(Use use) {
  const int u = static_cast<int>(use);
  SamplerArgs a{};
  a.logits = logits_[u];
  a.next_token = control_.ptr() + kNextToken;
  a.pos = control_.ptr() + kPosition;
  a.step = control_.ptr() + kStep;
  a.history = history_.ptr();
  a.host_ring = host_ring_device_;
  a.seen = seen_.ptr();
  a.argmax_slot = control_.ptr() + kArgmaxSlot;
  a.blocks_done = control_.ptr() + kBlocksDone;
  a.V = static_cast<int32_t>(vocab_);
  a.ring = static_cast<int32_t>(kRing);
  a.history_capacity = static_cast<int32_t>(history_capacity_);
  a.advance = advance_[u];
  a.temperature = sampling_.temperature;
  a.top_k = sampling_.top_k;
  a.top_p = sampling_.top_p;
  a.repetition_penalty = sampling_.repetition_penalty;
  a.seed = sampling_.seed;
  return args_.upload(&a, sizeof(a), static_cast<size_t>(u) * sizeof(SamplerArgs));
}

Status DeviceSampler::reset(std::span<const int32_t> prompt, const SamplingOptions& sampling) {
  // Written so that NaN fails every test (a NaN temperature would sample garbage without an error).
  if (!(sampling.temperature >= 0 && std::isfinite(sampling.temperature)) || sampling.top_k < 0 || !(sampling.top_p > 0.f && sampling.top_p <= 1.f) ||
      !(sampling.repetition_penalty > 0.f && std::isfinite(sampling.repetition_penalty)))
    return error(ErrorCode::kInvalidArgument, "sampling settings out of range: temperature >= 0, top-k >= 0, 0 < top-p <= 1, repetition penalty > 0");
  sampling_ = sampling;
  std::vector<uint8_t> seen(static_cast<size_t>(vocab_), 0);
  for (int32_t id : prompt)
    if (id >= 0 && id < vocab_) seen[static_cast<size_t>(id)] = 1;
  AC_TRY(seen_.upload(seen.data(), seen.size()));
  // Next token, position, step, the argmax slot and the block counter, all zero.
  const uint8_t zero[kControlBytes] = {};
  AC_TRY(control_.upload(zero, sizeof(zero)));
  AC_TRY(upload_args(Use::kDecode));
  return upload_args(Use::kPrefill);
}

Status DeviceSampler::set_position(int64_t position) {
  const int32_t p = static_cast<int32_t>(position);
  return control_.upload(&p, sizeof(p), kPosition);
}

Status DeviceSampler::set_next_token(int32_t token) { return control_.upload(&token, sizeof(token), kNextToken); }

Status DeviceSampler::set_next_token_at(int32_t token, int64_t position) {
  static_assert(kPosition == kNextToken + sizeof(int32_t), "the token and the position are adjacent");
  const int32_t both[2] = {token, static_cast<int32_t>(position)};
  return control_.upload(both, sizeof(both), kNextToken);
}

Status DeviceSampler::configure(Use use, CUdeviceptr logits, int advance) {
  const int u = static_cast<int>(use);
  if (logits_[u] == logits && advance_[u] == advance) return Status::ok();
  logits_[u] = logits;
  advance_[u] = advance;
  return upload_args(use);
}

Status DeviceSampler::enqueue(Use use, CUstream stream, bool programmatic) {
  const CUdeviceptr args = args_.ptr() + static_cast<size_t>(use) * sizeof(SamplerArgs);
  return gpu::launch_kernel(kernel_, emit::kSamplerKernel.kernel, static_cast<unsigned>(blocks_), 1, 1, kThreads, 0, stream, &args, programmatic);
}

int32_t DeviceSampler::token_of_step(int64_t step) const {
  return reinterpret_cast<volatile int32_t*>(host_ring_)[step % kRing];
}

}  // namespace agentcompile::runtime
