// On the GPU: NCCL's all_reduce and all_gather through gpu::NcclCommunicator (loaded at run time), one
// thread per GPU, on every GPU the machine has (one rank on a one-GPU machine: the sum and the gather
// are the identity, which is the tensor-parallel path at TP=1), for f32, f16 and bf16 at the sizes a
// decode step sums (one token's hidden row, 4096 and 8192) and a prefill chunk's (512 x 4096); each
// once enqueued directly and once captured in a CUDA graph and replayed, as the decode step runs it.
// Then the time of one captured all_reduce of a bf16 [1, 4096] and [1, 8192] row (median of 200
// replays), the figure the 70B check adds to the weight-streaming bound. With two GPUs or more, all of
// it again with the peer all-reduce set up (gpu/peer_all_reduce.h: rows up to 64 KiB summed by reading
// the peers' memory, larger ones on NCCL), plus one captured graph replayed 60 times on inputs that
// change between replays (the kernel's call counter and two slots), and its time against NCCL's.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "codegen/nvrtc_compiler.h"
#include "emit/artifact_record.h"
#include "gpu/driver_api.h"
#include "gpu/nccl.h"
#include "gpu/peer_all_reduce.h"
#include "gpu_test_support.h"

namespace agentcompile {
namespace {

const gpu::DriverApi& api() { return *gpu::driver_api(); }

// Host values of rank r: x[i] = (r + 1) * small(i), exact in every dtype, so sums are exact too.
float value(int rank, size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 7) - 3); }

uint16_t encode(float v, ir::DType dtype) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (dtype == ir::DType::kBF16) return static_cast<uint16_t>(bits >> 16);  // exact: small integers
  // f16 of a small integer: sign, exponent rebias, top mantissa bits.
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if (v == 0) return static_cast<uint16_t>(sign);
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) | ((bits >> 13) & 0x3ff));
}

std::vector<uint8_t> host_bytes(int rank, size_t count, ir::DType dtype) {
  std::vector<uint8_t> out(count * ir::dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) {
    if (dtype == ir::DType::kF32) {
      const float v = value(rank, i);
      std::memcpy(out.data() + i * 4, &v, 4);
    } else {
      const uint16_t h = encode(value(rank, i), dtype);
      std::memcpy(out.data() + i * 2, &h, 2);
    }
  }
  return out;
}

struct RankResult {
  std::string failure;
  std::vector<float> median_us;  // per timed size
};

// One bf16 all_reduce of `count` elements from `in` into `out`, captured in a CUDA graph and
// instantiated (the graph itself is destroyed: the executable keeps what it needs).
Expected<CUgraphExec> captured_all_reduce(gpu::NcclCommunicator& comm, CUdeviceptr in, CUdeviceptr out, size_t count, CUstream stream) {
  CUgraph g = nullptr;
  AC_TRY(gpu::cuda_status(api().StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), "capture"));
  const Status enqueued = comm.all_reduce_sum(in, out, count, ir::DType::kBF16, stream);
  const Status ended = gpu::cuda_status(api().StreamEndCapture(stream, &g), "end capture");
  AC_TRY(enqueued);
  AC_TRY(ended);
  CUgraphExec exec = nullptr;
  const Status instantiated = gpu::cuda_status(api().GraphInstantiateWithFlags(&exec, g, 0), "instantiate");
  api().GraphDestroy(g);
  AC_TRY(instantiated);
  return exec;
}

// One rank: its context on device `rank`, its communicator (with the peer all-reduce when `peer_cubin`
// is not empty), every case checked, then the timings.
RankResult run_rank(int ranks, int rank, const gpu::NcclUniqueId& id, const std::vector<char>& peer_cubin = {}) {
  RankResult result;
  auto fail = [&](const Status& status) {
    result.failure = "rank " + std::to_string(rank) + ": " + status.to_string();
    return result;
  };
  auto context = gpu::CudaContext::create(rank);
  if (!context) return fail(context.status());
  CUstream stream = (*context)->stream();
  auto comm = gpu::NcclCommunicator::create(ranks, rank, id);
  if (!comm) return fail(comm.status());
  if (!peer_cubin.empty()) {
    auto peer = gpu::PeerAllReduce::create(**comm, peer_cubin, stream, rank);
    if (!peer) return fail(peer.status());
    (*peer)->set_programmatic((*context)->info().sm_major >= 9);  // as the engine launches it
    (*comm)->use_peer_all_reduce(std::move(*peer));
    // Replays of one captured graph on changing inputs: every call takes the next of the three slots.
    const size_t count = 4096;
    auto in = gpu::DeviceBuffer::allocate(count * 2);
    auto out = gpu::DeviceBuffer::allocate(count * 2);
    if (!in || !out) return fail(!in ? in.status() : out.status());
    auto captured = captured_all_reduce(**comm, in->ptr(), out->ptr(), count, stream);
    if (!captured) return fail(captured.status());
    const CUgraphExec exec = *captured;
    for (int replay = 0; replay < 60; ++replay) {
      const int scale = 1 + replay % 5;  // rank r's row times scale: the sum is scale times the plain one
      std::vector<uint8_t> mine(count * 2), want(count * 2), got(count * 2);
      for (size_t i = 0; i < count; ++i) {
        // Every 11th element is -0 on every rank: the bits the kernel's slots mark empty with; it must
        // still arrive (the sum is +0: the kernel sends -0 as +0).
        const bool negative_zero = i % 11 == 0;
        const uint16_t h = negative_zero ? uint16_t{0x8000} : encode(value(rank, i) * static_cast<float>(scale), ir::DType::kBF16);
        std::memcpy(mine.data() + i * 2, &h, 2);
        float total = 0;
        for (int r = 0; r < ranks; ++r) total += negative_zero ? 0.0f : value(r, i) * static_cast<float>(scale);
        const uint16_t t = encode(total, ir::DType::kBF16);
        std::memcpy(want.data() + i * 2, &t, 2);
      }
      Status step = in->upload(mine.data(), mine.size());
      if (step.is_ok()) step = gpu::cuda_status(api().GraphLaunch(exec, stream), "graph launch");
      if (step.is_ok()) step = (*context)->synchronize();
      if (step.is_ok()) step = out->download(got.data(), got.size());
      if (!step.is_ok()) return fail(step);
      if (got != want) return fail(error(ErrorCode::kMismatch, "peer all_reduce, replay " + std::to_string(replay) + " of a captured graph: wrong sum"));
    }
    api().GraphExecDestroy(exec);
  }
  for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16}) {
    for (size_t count : {size_t{4096}, size_t{4099}, size_t{8192}, size_t{512 * 4096}}) {  // 4099: a tail past the 16-byte vectors
      for (bool graph : {false, true}) {
        const size_t bytes = count * ir::dtype_size(dtype);
        auto in = gpu::DeviceBuffer::allocate(bytes);
        auto sum = gpu::DeviceBuffer::allocate(bytes);
        auto gathered = gpu::DeviceBuffer::allocate(bytes * static_cast<size_t>(ranks));
        if (!in || !sum || !gathered) return fail(!in ? in.status() : !sum ? sum.status() : gathered.status());
        const std::vector<uint8_t> mine = host_bytes(rank, count, dtype);
        if (Status s = in->upload(mine.data(), bytes); !s.is_ok()) return fail(s);
        auto enqueue = [&]() -> Status {
          AC_TRY((*comm)->all_reduce_sum(in->ptr(), sum->ptr(), count, dtype, stream));
          return (*comm)->all_gather(in->ptr(), gathered->ptr(), count, dtype, stream);
        };
        if (graph) {
          CUgraph g = nullptr;
          CUgraphExec exec = nullptr;
          if (Status s = gpu::cuda_status(api().StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), "capture"); !s.is_ok()) return fail(s);
          Status enqueued = enqueue();
          Status ended = gpu::cuda_status(api().StreamEndCapture(stream, &g), "end capture");
          if (!enqueued.is_ok() || !ended.is_ok()) return fail(!enqueued.is_ok() ? enqueued : ended);
          if (Status s = gpu::cuda_status(api().GraphInstantiateWithFlags(&exec, g, 0), "instantiate"); !s.is_ok()) return fail(s);
          Status launched = gpu::cuda_status(api().GraphLaunch(exec, stream), "graph launch");
          api().GraphExecDestroy(exec);
          api().GraphDestroy(g);
          if (!launched.is_ok()) return fail(launched);
        } else if (Status s = enqueue(); !s.is_ok()) {
          return fail(s);
        }
        if (Status s = (*context)->synchronize(); !s.is_ok()) return fail(s);
        std::vector<uint8_t> got_sum(bytes), got_gathered(bytes * static_cast<size_t>(ranks)), want_sum;
        if (Status s = sum->download(got_sum.data(), bytes); !s.is_ok()) return fail(s);
        if (Status s = gathered->download(got_gathered.data(), got_gathered.size()); !s.is_ok()) return fail(s);
        std::vector<float> total(count, 0.0f);
        for (int r = 0; r < ranks; ++r)
          for (size_t i = 0; i < count; ++i) total[i] += value(r, i);
        std::vector<uint8_t> expected_sum(bytes);
        for (size_t i = 0; i < count; ++i) {
          if (dtype == ir::DType::kF32) std::memcpy(expected_sum.data() + i * 4, &total[i], 4);
          else {
            const uint16_t h = encode(total[i], dtype);
            std::memcpy(expected_sum.data() + i * 2, &h, 2);
          }
        }
        const std::string what = std::string(ir::dtype_name(dtype)) + " x" + std::to_string(count) + (graph ? " (graph)" : "");
        if (got_sum != expected_sum) return fail(error(ErrorCode::kMismatch, "all_reduce of " + what + " differs from the exact sum"));
        for (int r = 0; r < ranks; ++r)
          if (!std::equal(got_gathered.begin() + static_cast<long>(r * bytes), got_gathered.begin() + static_cast<long>((r + 1) * bytes),
                          host_bytes(r, count, dtype).begin()))
            return fail(error(ErrorCode::kMismatch, "all_gather of " + what + ": rank " + std::to_string(r) + "'s block differs"));
      }
    }
  }
  // Timing: one all_reduce of a decode row, captured once, replayed 200 times after 20 warm-ups.
  for (size_t count : {size_t{4096}, size_t{8192}}) {
    auto buffer = gpu::DeviceBuffer::allocate(count * 2);
    auto start = gpu::CudaEvent::create();
    auto stop = gpu::CudaEvent::create();
    if (!buffer || !start || !stop) return fail(error(ErrorCode::kResourceExhausted, "timing buffers"));
    auto captured = captured_all_reduce(**comm, buffer->ptr(), buffer->ptr(), count, stream);
    if (!captured) return fail(captured.status());
    const CUgraphExec exec = *captured;
    std::vector<float> samples;
    for (int i = 0; i < 220; ++i) {
      Status timed = start->record(stream);
      if (timed.is_ok()) timed = gpu::cuda_status(api().GraphLaunch(exec, stream), "graph launch");
      if (timed.is_ok()) timed = stop->record(stream);
      if (timed.is_ok()) timed = (*context)->synchronize();
      if (!timed.is_ok()) return fail(timed);
      auto ms = stop->elapsed_since(*start);
      if (ms && i >= 20) samples.push_back(*ms * 1000.0f);
    }
    api().GraphExecDestroy(exec);
    std::sort(samples.begin(), samples.end());
    result.median_us.push_back(samples.empty() ? -1.0f : samples[samples.size() / 2]);
  }
  return result;
}

TEST(NcclCollectives, EveryGpuSumsAndGathersExactlyAlsoInACudaGraph) {
  AC_REQUIRE_GPU();
  auto library = gpu::load_nccl();
  ASSERT_TRUE(library.has_value()) << library.status().to_string();
  int devices = 0;
  ASSERT_EQ(api().Init(0), CUDA_SUCCESS);  // the GPU probe ran in a forked child: this process has not initialized CUDA
  ASSERT_EQ(api().DeviceGetCount(&devices), CUDA_SUCCESS);
  std::printf("NCCL %d (%s), %d GPU(s), NCCL_NVLS_ENABLE set to 0 by the communicator\n", library->version, library->path.c_str(), devices);
  auto id = gpu::NcclCommunicator::unique_id();
  ASSERT_TRUE(id.has_value()) << id.status().to_string();
  std::vector<RankResult> results(static_cast<size_t>(devices));
  std::vector<std::thread> threads;
  for (int r = 0; r < devices; ++r) threads.emplace_back([&, r] { results[static_cast<size_t>(r)] = run_rank(devices, r, *id); });
  for (auto& thread : threads) thread.join();
  for (const RankResult& r : results) EXPECT_TRUE(r.failure.empty()) << r.failure;
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  if (results[0].failure.empty())
    std::printf("all_reduce bf16 over %d rank(s), captured: [1, 4096] %.2f us, [1, 8192] %.2f us (median of 200, rank 0)\n", devices,
                results[0].median_us[0], results[0].median_us[1]);
}

TEST(NcclCollectives, PeerAllReduceSumsExactlyAndReplaysInACudaGraph) {
  AC_REQUIRE_GPU();
  ASSERT_EQ(api().Init(0), CUDA_SUCCESS);
  int devices = 0;
  ASSERT_EQ(api().DeviceGetCount(&devices), CUDA_SUCCESS);
  if (devices < 2) GTEST_SKIP() << "the peer all-reduce needs two GPUs; this machine has " << devices;
  auto library = gpu::load_nccl();
  ASSERT_TRUE(library.has_value()) << library.status().to_string();
  // The kernel as a compile ships it (emit::kPeerAllReduceKernel), compiled for this GPU.
  std::vector<char> cubin;
  {
    auto context = gpu::CudaContext::create(0);
    ASSERT_TRUE(context) << context.status().to_string();
    codegen::NvrtcOptions nvrtc;
    nvrtc.arch = gpu::nvrtc_arch((*context)->info());
    auto compiled = codegen::compile_all({{emit::kPeerAllReduceKernel.kernel, emit::kPeerAllReduceKernel.source}}, nvrtc);
    ASSERT_TRUE(compiled && compiled->size() == 1 && (*compiled)[0].ok) << (compiled ? (*compiled)[0].log : compiled.status().to_string());
    cubin = (*compiled)[0].cubin;
  }
  for (int ranks : devices > 2 ? std::vector<int>{2, devices} : std::vector<int>{2}) {
    auto id = gpu::NcclCommunicator::unique_id();
    ASSERT_TRUE(id.has_value()) << id.status().to_string();
    std::vector<RankResult> results(static_cast<size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { results[static_cast<size_t>(r)] = run_rank(ranks, r, *id, cubin); });
    for (auto& thread : threads) thread.join();
    for (const RankResult& r : results) EXPECT_TRUE(r.failure.empty()) << r.failure;
    if (results[0].failure.empty())
      std::printf("peer all_reduce bf16 over %d ranks, captured: [1, 4096] %.2f us, [1, 8192] %.2f us (median of 200, rank 0)\n", ranks,
                  results[0].median_us[0], results[0].median_us[1]);
  }
}

}  // namespace
}  // namespace agentcompile
