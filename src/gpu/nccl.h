// NCCL, loaded at run time: tensor parallelism's collectives (all_reduce, all_gather regions) on a
// communicator per rank. The library is dlopen'ed, never linked, so the runtime builds and runs
// without NCCL wherever no collective is asked for; the few types of nccl.h it needs are declared here
// (their ABI has been fixed since NCCL 2.0), so no NCCL header is needed to build either.
//
// Where libnccl.so.2 is looked for, in order: the AGENTCOMPILE_NCCL environment variable (the library
// file, or a directory holding it), the dynamic loader's default path, then the lib/ folder of the
// Python package nvidia-nccl (where PyTorch's pip wheels put it: nvidia/nccl/lib, found by asking
// python3). A missing library is an error naming every place looked in.
//
// Every communicator is created with NVLink SHARP (multicast) off: NCCL_NVLS_ENABLE=0 is set, with
// overwrite, before the first ncclCommInitRank, because the shared machines keep multicast off.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/dtype.h"

namespace agentcompile::gpu {

class PeerAllReduce;

// ncclUniqueId: the bytes rank 0 creates and every rank passes to its communicator's init.
struct NcclUniqueId {
  char internal[128];
};

// The places libnccl.so.2 is looked for, in order (the pip location only when python3 finds it).
std::vector<std::string> nccl_search_paths();

// The loaded library's version (NCCL_VERSION_CODE, e.g. 22809 for 2.28.9) and path, or the error that
// names every place looked in. Loads once per process.
struct NcclLibrary {
  int version = 0;
  std::string path;
};
Expected<NcclLibrary> load_nccl();

// One rank's communicator; its collectives are enqueued on a stream (and so may be captured in a CUDA
// graph). Needs the rank's CUDA context current on the calling thread.
class NcclCommunicator {
 public:
  static Expected<NcclUniqueId> unique_id();
  // All ranks call this at once, each on its own thread (or process) with its own device current.
  static Expected<std::unique_ptr<NcclCommunicator>> create(int ranks, int rank, const NcclUniqueId& id);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  // Small all-reduces go to the peer kernel from now on (gpu/peer_all_reduce.h), larger ones to NCCL;
  // every rank sets one up or none (PeerAllReduce::create decides alike on all).
  void use_peer_all_reduce(std::unique_ptr<PeerAllReduce> peer);
  bool uses_peer_all_reduce() const { return peer_ != nullptr; }
  // out = the element-wise sum over the ranks of in (count elements of dtype f32, f16 or bf16; in == out
  // is allowed).
  Status all_reduce_sum(CUdeviceptr in, CUdeviceptr out, size_t count, ir::DType dtype, CUstream stream);
  // out = every rank's `count` elements of in, joined in rank order (out holds ranks * count).
  Status all_gather(CUdeviceptr in, CUdeviceptr out, size_t count, ir::DType dtype, CUstream stream);

 private:
  NcclCommunicator() = default;
  void* comm_ = nullptr;  // ncclComm_t
  std::unique_ptr<PeerAllReduce> peer_;
  int ranks_ = 0, rank_ = 0;
};

}  // namespace agentcompile::gpu
