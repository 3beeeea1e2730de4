// The peer all-reduce's set-up and launches (see peer_all_reduce.h).
#include "gpu/peer_all_reduce.h"

#include <unistd.h>

#include <cstring>
#include <string>

#include "gpu/driver_api.h"
#include "gpu/nccl.h"

namespace agentcompile::gpu {

namespace {

const DriverApi& api() { return *driver_api(); }

constexpr int kMaxRanks = 8;        // ac::kPeerAllReduceMaxRanks
constexpr unsigned kThreads = 512;  // ac::kPeerAllReduceThreads
constexpr size_t kSlots = 3;        // ac::kPeerAllReduceSlots
constexpr size_t kHeaderBytes = 256;  // the call counter, then the bytes the last call received, padded
constexpr uint16_t kEmptyHalf = 0x8000;  // ac::kPeerEmptyWord's halves: an empty element

// The host mirror of ac::PeerAllReduceArgs (kernels/peer_all_reduce.cuh): the same members in the same order.
struct KernelArgs {
  const void* in;
  void* out;
  unsigned char* slots[kMaxRanks];
  unsigned long long* calls;
  unsigned long long* filled;
  unsigned long long slot_bytes;
  unsigned long long count;
  int ranks;
  int rank;
  int dtype;
};
static_assert(sizeof(KernelArgs) == 128, "KernelArgs must match ac::PeerAllReduceArgs");

// What each rank tells the others, gathered through NCCL (a multiple of 4 bytes: sent as f32 elements).
struct Announcement {
  uint64_t pid;
  uint64_t slots;
  int32_t device;
  int32_t ok;  // this rank could reach every peer
};

Expected<std::vector<Announcement>> gather(NcclCommunicator& comm, const Announcement& mine, CUstream stream) {
  const int ranks = comm.ranks();
  AC_ASSIGN_OR_RETURN(DeviceBuffer in, DeviceBuffer::allocate(sizeof(Announcement)));
  AC_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::allocate(sizeof(Announcement) * static_cast<size_t>(ranks)));
  AC_TRY(in.upload(&mine, sizeof mine));
  AC_TRY(comm.all_gather(in.ptr(), out.ptr(), sizeof(Announcement) / 4, ir::DType::kF32, stream));
  AC_CU(api().StreamSynchronize(stream), "cuStreamSynchronize (peer all-reduce set-up)");
  std::vector<Announcement> all(static_cast<size_t>(ranks));
  AC_TRY(out.download(all.data(), sizeof(Announcement) * all.size()));
  return all;
}

int dtype_code(ir::DType dtype) { return dtype == ir::DType::kF32 ? 0 : dtype == ir::DType::kF16 ? 1 : 2; }

}  // namespace

bool PeerAllReduce::takes(size_t count, ir::DType dtype) {
  if (dtype != ir::DType::kF32 && dtype != ir::DType::kF16 && dtype != ir::DType::kBF16) return false;
  return count * ir::dtype_size(dtype) <= kMaxBytes;
}

Expected<std::unique_ptr<PeerAllReduce>> PeerAllReduce::create(NcclCommunicator& communicator, const std::vector<char>& cubin,
                                                               CUstream stream, int device_ordinal) {
  std::unique_ptr<PeerAllReduce> p(new PeerAllReduce());
  p->ranks_ = communicator.ranks();
  p->rank_ = communicator.rank();
  // Every rank reaches both exchanges below, whatever fails locally, so no rank waits alone.
  Announcement mine{static_cast<uint64_t>(getpid()), 0, -1, 0};
  CUdevice device = 0;
  auto set_up_locally = [&]() -> Status {
    if (p->ranks_ < 2 || p->ranks_ > kMaxRanks)
      return error(ErrorCode::kUnsupported, std::to_string(p->ranks_) + " ranks (the kernel takes 2 to 8)");
    // (Not cuCtxGetDevice: resolved for CUDA 13 it is the two-argument cuCtxGetDevice_v2.)
    AC_CU(api().DeviceGet(&device, device_ordinal), "cuDeviceGet");
    mine.device = static_cast<int32_t>(device);
    AC_ASSIGN_OR_RETURN(p->module_, CudaModule::load(cubin, "the peer all-reduce kernel"));
    AC_ASSIGN_OR_RETURN(p->kernel_, p->module_->function("ac_peer_all_reduce"));
    // Every slot starts empty (the kernel's protocol), the counter and the bytes received at zero.
    const size_t slot_bytes = kSlots * static_cast<size_t>(p->ranks_) * kMaxBytes;
    AC_ASSIGN_OR_RETURN(p->buffer_, DeviceBuffer::allocate(kHeaderBytes + slot_bytes));
    AC_TRY(p->buffer_.fill_bytes(0));
    const std::vector<uint16_t> empty(slot_bytes / sizeof(uint16_t), kEmptyHalf);
    AC_TRY(p->buffer_.upload(empty.data(), slot_bytes, kHeaderBytes));
    mine.slots = p->buffer_.ptr() + kHeaderBytes;
    p->calls_ = p->buffer_.ptr();
    p->filled_ = p->buffer_.ptr() + 8;
    return Status::ok();
  };
  const Status local = set_up_locally();
  std::string local_failure = local ? "" : local.message();
  AC_ASSIGN_OR_RETURN(const std::vector<Announcement> first, gather(communicator, mine, stream));
  // Reach every peer: one process (addresses mean the same), a device that can access each peer's.
  for (int r = 0; r < p->ranks_ && local_failure.empty(); ++r) {
    const Announcement& peer = first[static_cast<size_t>(r)];
    if (peer.pid != mine.pid) local_failure = "rank " + std::to_string(r) + " runs in another process";
    else if (peer.device < 0 || peer.slots == 0) local_failure = "rank " + std::to_string(r) + " could not set up its buffers";
    if (!local_failure.empty() || r == p->rank_ || peer.device == mine.device) continue;
    int can = 0;
    if (api().DeviceCanAccessPeer(&can, device, peer.device) != CUDA_SUCCESS || !can) {
      local_failure = "GPU " + std::to_string(device) + " cannot access GPU " + std::to_string(peer.device) + "'s memory";
      continue;
    }
    CUcontext peer_context = nullptr;
    if (CUresult r2 = api().DevicePrimaryCtxRetain(&peer_context, peer.device); r2 != CUDA_SUCCESS) {
      local_failure = cuda_status(r2, "cuDevicePrimaryCtxRetain").message();
      continue;
    }
    p->retained_.push_back(peer_context);
    p->retained_devices_.push_back(peer.device);
    const CUresult enabled = api().CtxEnablePeerAccess(peer_context, 0);
    if (enabled != CUDA_SUCCESS && enabled != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
      local_failure = cuda_status(enabled, "cuCtxEnablePeerAccess").message();
  }
  mine.ok = local_failure.empty() ? 1 : 0;
  AC_ASSIGN_OR_RETURN(const std::vector<Announcement> second, gather(communicator, mine, stream));
  for (int r = 0; r < p->ranks_; ++r)
    if (!second[static_cast<size_t>(r)].ok)
      return error(ErrorCode::kUnsupported, "peer all-reduce: rank " + std::to_string(r) + " cannot take part" +
                                                (r == p->rank_ ? ": " + local_failure : ""));
  for (const Announcement& a : first) p->slots_.push_back(a.slots);
  return p;
}

PeerAllReduce::~PeerAllReduce() {
  for (CUdevice device : retained_devices_) api().DevicePrimaryCtxRelease(device);
}

Status PeerAllReduce::all_reduce_sum(CUdeviceptr in, CUdeviceptr out, size_t count, ir::DType dtype, CUstream stream) {
  if (!takes(count, dtype))
    return error(ErrorCode::kInvalidArgument, "peer all-reduce of " + std::to_string(count) + " " + std::string(ir::dtype_name(dtype)) +
                                                  " elements: it takes f32/f16/bf16 up to " + std::to_string(kMaxBytes) + " bytes");
  KernelArgs args{};
  args.in = reinterpret_cast<const void*>(in);
  args.out = reinterpret_cast<void*>(out);
  for (int r = 0; r < ranks_; ++r) args.slots[r] = reinterpret_cast<unsigned char*>(slots_[static_cast<size_t>(r)]);
  args.calls = reinterpret_cast<unsigned long long*>(calls_);
  args.filled = reinterpret_cast<unsigned long long*>(filled_);
  args.slot_bytes = kMaxBytes;
  args.count = count;
  args.ranks = ranks_;
  args.rank = rank_;
  args.dtype = dtype_code(dtype);
  return launch_kernel(kernel_, "ac_peer_all_reduce", 1, 1, 1, kThreads, 0, stream, &args, programmatic_);
}

}  // namespace agentcompile::gpu
