// Which transport a tensor-parallel engine gives decode's small all-reduces: NCCL or the peer-memory
// kernel (gpu/peer_all_reduce.h). Both are timed on every rank where they will run, captured in a CUDA
// graph as the decode step runs them (a run of back-to-back calls on one decode row), and the ranks
// agree through NCCL: the times are summed over the ranks, so every rank takes the same transport (a
// rank on NCCL and another on the peer kernel would wait for each other forever).
#pragma once

#include <cuda.h>

#include <cstddef>

#include "agentcompile/status.h"
#include "ir/dtype.h"

namespace agentcompile::gpu {

class NcclCommunicator;
class PeerAllReduce;

struct AllReduceTimes {
  double nccl_us = 0;  // one all-reduce, the ranks' mean
  double peer_us = 0;  // 0: the peer kernel was not timed
  bool peer_faster() const { return peer_us > 0 && peer_us < nccl_us; }
};

// Every rank at once, before `peer` is handed to the communicator (so NCCL's time is NCCL's): `count`
// elements of `dtype`, the row a decode step sums. `peer` may be null (every rank alike): NCCL alone is
// timed, so a run on NCCL still knows what its all-reduces cost.
Expected<AllReduceTimes> time_all_reduces(NcclCommunicator& communicator, PeerAllReduce* peer, size_t count, ir::DType dtype,
                                          CUstream stream);

}  // namespace agentcompile::gpu
