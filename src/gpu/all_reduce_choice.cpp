// Timing NCCL's and the peer kernel's decode all-reduce on every rank (see all_reduce_choice.h).
#include "gpu/all_reduce_choice.h"

#include <functional>
#include <vector>

#include "gpu/cuda_driver.h"
#include "gpu/driver_api.h"
#include "gpu/nccl.h"
#include "gpu/peer_all_reduce.h"

namespace agentcompile::gpu {

namespace {

const DriverApi& api() { return *driver_api(); }

constexpr int kCallsPerGraph = 20;  // back to back, as a decode step's layers issue them
constexpr int kTimedReplays = 5;    // after one warm-up replay

// Microseconds per call of `call` (enqueues one all-reduce), captured kCallsPerGraph times in one graph.
Expected<double> time_captured(const std::function<Status()>& call, CUstream stream) {
  CUgraph graph = nullptr;
  AC_TRY(cuda_status(api().StreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED), "begin capture"));
  Status enqueued = Status::ok();
  for (int i = 0; i < kCallsPerGraph && enqueued.is_ok(); ++i) enqueued = call();
  const Status ended = cuda_status(api().StreamEndCapture(stream, &graph), "end capture");
  AC_TRY(enqueued);
  AC_TRY(ended);
  CUgraphExec exec = nullptr;
  const Status instantiated = cuda_status(api().GraphInstantiateWithFlags(&exec, graph, 0), "instantiate");
  api().GraphDestroy(graph);
  AC_TRY(instantiated);
  auto timed = [&]() -> Expected<double> {
    AC_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create());
    AC_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create());
    AC_TRY(cuda_status(api().GraphLaunch(exec, stream), "graph launch"));  // warm-up
    AC_TRY(start.record(stream));
    for (int i = 0; i < kTimedReplays; ++i) AC_TRY(cuda_status(api().GraphLaunch(exec, stream), "graph launch"));
    AC_TRY(stop.record(stream));
    AC_TRY(cuda_status(api().StreamSynchronize(stream), "synchronize"));
    AC_ASSIGN_OR_RETURN(float ms, stop.elapsed_since(start));
    return static_cast<double>(ms) * 1000.0 / (kTimedReplays * kCallsPerGraph);
  };
  Expected<double> us = timed();
  api().GraphExecDestroy(exec);
  return us;
}

}  // namespace

Expected<AllReduceTimes> time_all_reduces(NcclCommunicator& communicator, PeerAllReduce* peer, size_t count, ir::DType dtype,
                                          CUstream stream) {
  if (peer && !PeerAllReduce::takes(count, dtype))
    return error(ErrorCode::kInvalidArgument, "timing all-reduces of " + std::to_string(count) + " " + std::string(ir::dtype_name(dtype)) +
                                                  " elements: the peer kernel does not take them");
  AC_ASSIGN_OR_RETURN(DeviceBuffer row, DeviceBuffer::allocate(count * ir::dtype_size(dtype)));
  AC_TRY(cuda_status(api().MemsetD8Async(row.ptr(), 0, count * ir::dtype_size(dtype), stream), "clear the timed row"));
  // One eager call of each first: NCCL sets up its connections lazily, on a rank's first collective.
  AC_TRY(communicator.all_reduce_sum(row.ptr(), row.ptr(), count, dtype, stream));
  if (peer) AC_TRY(peer->all_reduce_sum(row.ptr(), row.ptr(), count, dtype, stream));
  AC_ASSIGN_OR_RETURN(double nccl_us,
                      time_captured([&] { return communicator.all_reduce_sum(row.ptr(), row.ptr(), count, dtype, stream); }, stream));
  double peer_us = 0;
  if (peer) {
    AC_ASSIGN_OR_RETURN(peer_us, time_captured([&] { return peer->all_reduce_sum(row.ptr(), row.ptr(), count, dtype, stream); }, stream));
  }
  // The ranks' sums, so every rank compares the same two numbers.
  const std::vector<float> mine{static_cast<float>(nccl_us), static_cast<float>(peer_us)};
  AC_ASSIGN_OR_RETURN(DeviceBuffer times, DeviceBuffer::allocate(sizeof(float) * mine.size()));
  AC_TRY(times.upload(mine.data(), sizeof(float) * mine.size()));
  AC_TRY(communicator.all_reduce_sum(times.ptr(), times.ptr(), mine.size(), ir::DType::kF32, stream));
  AC_TRY(cuda_status(api().StreamSynchronize(stream), "synchronize"));
  std::vector<float> sums(mine.size());
  AC_TRY(times.download(sums.data(), sizeof(float) * sums.size()));
  AllReduceTimes result;
  result.nccl_us = sums[0] / communicator.ranks();
  result.peer_us = sums[1] / communicator.ranks();
  return result;
}

}  // namespace agentcompile::gpu
