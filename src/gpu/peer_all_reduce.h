// Tensor parallelism's small all-reduces without NCCL: when every rank's GPU is in this process and
// can reach the others' memory (peer access over NVLink), a one-block kernel (kernels/peer_all_reduce.cuh,
// shipped in the artifact as a runtime kernel) writes its row into every peer's buffer and sums the
// rows that arrive in its own. A decode step's all-reduce is one hidden row (8-16 KB), where NCCL's latency in a CUDA
// graph (~11-15 us on H200s) is several times the transfer. The engine times both on its decode row
// and takes the faster (gpu/all_reduce_choice.h).
//
// Set up collectively: every rank calls create() at the same point (it exchanges buffer addresses,
// process ids and devices through the NCCL communicator), and every rank gets the same answer, so all
// ranks take the same path for every call (a rank on NCCL and another on the peer kernel would hang).
#pragma once

#include <cuda.h>

#include <memory>
#include <vector>

#include "agentcompile/status.h"
#include "gpu/cuda_driver.h"
#include "ir/dtype.h"

namespace agentcompile::gpu {

class NcclCommunicator;

class PeerAllReduce {
 public:
  // The largest all-reduce the kernel takes (bytes per rank); larger ones stay with NCCL.
  static constexpr size_t kMaxBytes = size_t{64} << 10;

  // Every rank at once, its context (on GPU `device`, an ordinal) current, with the kernel's cubin
  // (entry ac_peer_all_reduce).
  // An error (ranks in several processes, no peer access, more ranks than the kernel takes) leaves
  // the all-reduces to NCCL on every rank alike.
  static Expected<std::unique_ptr<PeerAllReduce>> create(NcclCommunicator& communicator, const std::vector<char>& cubin,
                                                         CUstream stream, int device);
  ~PeerAllReduce();
  PeerAllReduce(const PeerAllReduce&) = delete;
  PeerAllReduce& operator=(const PeerAllReduce&) = delete;

  // Whether the kernel takes `count` elements of `dtype` (f32, f16, bf16; at most kMaxBytes).
  static bool takes(size_t count, ir::DType dtype);
  // out = the sum over the ranks of in, enqueued on `stream` (capturable in a CUDA graph).
  Status all_reduce_sum(CUdeviceptr in, CUdeviceptr out, size_t count, ir::DType dtype, CUstream stream);
  // Launch with programmatic dependent launch (sm_90+, as the engine launches its generated kernels):
  // the kernel after an all-reduce starts loading its weights while the ranks exchange.
  void set_programmatic(bool on) { programmatic_ = on; }

 private:
  PeerAllReduce() = default;
  std::unique_ptr<CudaModule> module_;
  CUfunction kernel_ = nullptr;
  DeviceBuffer buffer_;                  // [call counter, bytes received][three slots of a part per rank]
  std::vector<CUdeviceptr> slots_;       // every rank's
  std::vector<CUcontext> retained_;      // peers' primary contexts, retained for peer access
  std::vector<CUdevice> retained_devices_;
  CUdeviceptr calls_ = 0, filled_ = 0;
  int ranks_ = 0, rank_ = 0;
  bool programmatic_ = false;
};

}  // namespace agentcompile::gpu
