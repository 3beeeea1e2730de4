// What the compiler and the runtime ask of the GPU before they launch anything: the device's
// properties, its copy bandwidth, and the NVRTC target its kernels are built for.
//
// CUDA must not be initialized in a process that later forks admission workers, so probe_device and
// measure_copy_bandwidth_gbs run in a forked child of their own (gpu_worker.h); a process that runs
// CUDA already asks its own context (CudaContext::info).
#pragma once

#include <cstddef>
#include <string>

#include "agentcompile/status.h"
#include "gpu/cuda_driver.h"

namespace agentcompile::gpu {

Expected<DeviceInfo> probe_device();
// The device as this process may ask about it: its own context's view when this process runs CUDA
// already (a second engine), else probe_device(), so a process that has not touched CUDA stays free to
// fork admission workers. (A process where another library started CUDA, the Python binding, must ask
// through CudaContext::create: a forked child of it cannot use CUDA.)
Expected<DeviceInfo> device_here();
// Device-to-device copy bandwidth, bytes read + written per second (GB/s), measured now.
Expected<double> measure_copy_bandwidth_gbs(size_t bytes = size_t{1} << 30);
// NVRTC target for a device: sm_90a for compute capability 9.0, otherwise sm_XY.
std::string nvrtc_arch(const DeviceInfo& info);

}  // namespace agentcompile::gpu
