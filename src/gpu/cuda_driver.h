// A thin, checked layer over the CUDA driver API for the tune stage and the runtime: the primary
// context, modules loaded from cubins, launches of ac::RegionArgs kernels, device memory and events.
// Every call returns a Status naming the call and the CUDA error, never aborts.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::gpu {

// Turns a CUresult into a Status ("cuLaunchKernel(gemv_x): CUDA_ERROR_ILLEGAL_ADDRESS: an illegal
// memory access was encountered").
Status cuda_status(CUresult result, const std::string& what);
#define AC_CU(call, what) AC_TRY(::agentcompile::gpu::cuda_status((call), (what)))

// True once this process has initialized CUDA (created a context). A process that has cannot fork
// GPU workers any more (admission) nor probe the device in a forked child.
bool cuda_initialized_in_process();

// True when a CUDA device is usable; `why` says what is missing otherwise.
bool gpu_available(std::string* why);

struct DeviceInfo {
  std::string name;
  int sm_major = 0, sm_minor = 0, multiprocessors = 0;
  int64_t total_memory = 0, l2_bytes = 0, shared_per_block_optin = 0;
  int driver_version = 0;
};

class CudaContext {
 public:
  static Expected<std::unique_ptr<CudaContext>> create(int ordinal = 0);
  ~CudaContext();
  const DeviceInfo& info() const { return info_; }
  CUstream stream() const { return stream_; }
  Status synchronize();
  // Makes this context the calling thread's current one. A CUDA context is current per thread: a caller on
  // a thread other than the one that created it (the server's worker) calls this before any driver call.
  Status make_current() const;

 private:
  CudaContext() = default;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceInfo info_;
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static Expected<DeviceBuffer> allocate(size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
  CUdeviceptr ptr() const { return ptr_; }
  void* get() const { return reinterpret_cast<void*>(ptr_); }
  size_t bytes() const { return bytes_; }
  Status upload(const void* host, size_t bytes, size_t offset = 0);
  Status download(void* host, size_t bytes, size_t offset = 0) const;
  Status fill_bytes(uint8_t value);
  // Fills the whole buffer with its first `period` bytes, repeated (device-to-device copies that
  // double the filled part; returns when they are done).
  Status repeat_prefix(size_t period);

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory (cuMemHostAlloc): a device-to-host copy into it runs at the bus's speed,
// where a pageable destination is staged by the driver at a fraction of it.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  static Expected<PinnedBuffer> allocate(size_t bytes);
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  ~PinnedBuffer();
  uint8_t* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

class CudaModule {
 public:
  static Expected<std::unique_ptr<CudaModule>> load(const std::vector<char>& cubin, const std::string& what);
  ~CudaModule();
  Expected<CUfunction> function(const std::string& name) const;

 private:
  CUmodule module_ = nullptr;
  std::string what_;
};

// Launches `function` with its one by-value argument, ac::RegionArgs (`args` points to the host mirror).
// With `programmatic_dependency` (sm_90+), the kernel may start before the previous kernel in the
// stream finishes; generated kernels wait for it in their first statement (ac::wait_for_producer_grid).
Status launch_kernel(CUfunction function, const std::string& name, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                     unsigned block_x, unsigned shared_bytes, CUstream stream, const void* args,
                     bool programmatic_dependency = false);

// Asynchronous device-to-device copy of `bytes` from src to dst on `stream`.
Status copy_device(const DeviceBuffer& dst, const DeviceBuffer& src, size_t bytes, CUstream stream);

class CudaEvent {
 public:
  static Expected<CudaEvent> create();
  CudaEvent(CudaEvent&& other) noexcept : event_(other.event_) { other.event_ = nullptr; }
  CudaEvent(const CudaEvent&) = delete;
  ~CudaEvent();
  Status record(CUstream stream);
  // Milliseconds from `start` to this event (both recorded, this one completed).
  Expected<float> elapsed_since(const CudaEvent& start) const;

 private:
  explicit CudaEvent(CUevent event) : event_(event) {}
  CUevent event_ = nullptr;
};

}  // namespace agentcompile::gpu
