// Library launches of candidates (plan::Launch::library): cuBLAS GEMMs ("gemm": one linear,
// "gemm_batched": a strided-batched matmul with transposed operands), the fallback of matmul regions. Interface slots in library_args ("in0", "w1", "out0", "workspace:<bytes per token>", "workspace:<bytes per token>+<bytes>")
// are resolved against the same ac::RegionArgs the generated kernels receive. The collective family's
// NCCL calls ("nccl_all_reduce", "nccl_all_gather") go through the rank's communicator; without one, a
// collective of one rank is the copy it amounts to (what admission checks on one GPU).
#pragma once

#include <cuda.h>

#include <memory>

#include "agentcompile/status.h"
#include "plan/candidate.h"
#include "gpu/nccl.h"
#include "gpu/region_args.h"

namespace agentcompile::gpu {

class LibraryRunner {
 public:
  // Needs a current CUDA context; the handle is bound to `stream`.
  static Expected<std::unique_ptr<LibraryRunner>> create(CUstream stream);
  ~LibraryRunner();
  Status run(const plan::Launch& launch, const plan::Match& match, const RegionArgs& args);
  // The rank's communicator for the collective family's calls (not owned; may be null).
  void set_communicator(NcclCommunicator* communicator) { communicator_ = communicator; }

 private:
  LibraryRunner() = default;
  Status run_collective(const plan::Launch& launch, const RegionArgs& args);
  CUstream stream_ = nullptr;
  NcclCommunicator* communicator_ = nullptr;
  Status run_batched(const plan::Launch& launch, const RegionArgs& args);
  void* handle_ = nullptr;  // cublasHandle_t
};

}  // namespace agentcompile::gpu
