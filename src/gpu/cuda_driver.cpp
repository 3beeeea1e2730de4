// CUDA driver API wrappers.
#include "gpu/cuda_driver.h"

#include "gpu/driver_api.h"

#include <algorithm>
#include <atomic>

namespace agentcompile::gpu {

namespace {
std::atomic<bool> g_cuda_initialized{false};
// Only reached after gpu_available() or CudaContext::create() loaded the driver.
const DriverApi& api() { return *driver_api(); }
}  // namespace

Status cuda_status(CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* name = nullptr;
  const char* text = nullptr;
  if (const DriverApi* loaded = driver_api()) {
    loaded->GetErrorName(result, &name);
    loaded->GetErrorString(result, &text);
  }
  return error(ErrorCode::kInternal, what + ": " + (name ? name : "CUDA error " + std::to_string(result)) + ": " +
                                         (text ? text : ""));
}

bool cuda_initialized_in_process() { return g_cuda_initialized.load(); }

bool gpu_available(std::string* why) {
  if (!driver_api(why)) return false;
  CUresult result = api().Init(0);
  if (result != CUDA_SUCCESS) {
    if (why) *why = cuda_status(result, "cuInit").message();
    return false;
  }
  int count = 0;
  result = api().DeviceGetCount(&count);
  if (result != CUDA_SUCCESS || count == 0) {
    if (why) *why = result != CUDA_SUCCESS ? cuda_status(result, "cuDeviceGetCount").message() : "no CUDA device";
    return false;
  }
  return true;
}

Expected<std::unique_ptr<CudaContext>> CudaContext::create(int ordinal) {
  std::string why;
  if (!driver_api(&why)) return error(ErrorCode::kUnsupported, why);
  std::unique_ptr<CudaContext> ctx(new CudaContext());
  AC_CU(api().Init(0), "cuInit");
  g_cuda_initialized = true;
  AC_CU(api().DeviceGet(&ctx->device_, ordinal), "cuDeviceGet");
  AC_CU(api().DevicePrimaryCtxRetain(&ctx->context_, ctx->device_), "cuDevicePrimaryCtxRetain");
  AC_CU(api().CtxSetCurrent(ctx->context_), "cuCtxSetCurrent");
  // A blocking stream: it orders after the synchronous copies and memsets of the legacy default stream.
  AC_CU(api().StreamCreate(&ctx->stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
  char name[256] = {};
  api().DeviceGetName(name, sizeof(name), ctx->device_);
  DeviceInfo& info = ctx->info_;
  info.name = name;
  int value = 0;
  auto attr = [&](CUdevice_attribute a) {
    api().DeviceGetAttribute(&value, a, ctx->device_);
    return value;
  };
  info.sm_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.sm_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  size_t total = 0;
  api().DeviceTotalMem(&total, ctx->device_);
  info.total_memory = static_cast<int64_t>(total);
  api().DriverGetVersion(&info.driver_version);
  return ctx;
}

CudaContext::~CudaContext() {
  if (stream_) api().StreamDestroy(stream_);
  if (context_) api().DevicePrimaryCtxRelease(device_);
}

Status CudaContext::synchronize() { return cuda_status(api().StreamSynchronize(stream_), "cuStreamSynchronize"); }

Status CudaContext::make_current() const { return cuda_status(api().CtxSetCurrent(context_), "cuCtxSetCurrent"); }

Expected<DeviceBuffer> DeviceBuffer::allocate(size_t bytes) {
  DeviceBuffer buffer;
  if (bytes == 0) return buffer;
  AC_CU(api().MemAlloc(&buffer.ptr_, bytes), "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  buffer.bytes_ = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) api().MemFree(ptr_);
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) api().MemFree(ptr_);
}

Status DeviceBuffer::upload(const void* host, size_t bytes, size_t offset) {
  if (offset + bytes > bytes_) return error(ErrorCode::kInternal, "upload past the end of a device buffer");
  return cuda_status(api().MemcpyHtoD(ptr_ + offset, host, bytes), "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void* host, size_t bytes, size_t offset) const {
  if (offset + bytes > bytes_) return error(ErrorCode::kInternal, "download past the end of a device buffer");
  return cuda_status(api().MemcpyDtoH(host, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

Status DeviceBuffer::fill_bytes(uint8_t value) {
  if (!bytes_) return Status::ok();
  return cuda_status(api().MemsetD8(ptr_, value, bytes_), "cuMemsetD8");
}

Status DeviceBuffer::repeat_prefix(size_t period) {
  if (period == 0 || period > bytes_)
    return error(ErrorCode::kInvalidArgument, "repeat_prefix: period " + std::to_string(period) + " of a " + std::to_string(bytes_) + "-byte buffer");
  for (size_t filled = period; filled < bytes_;) {
    const size_t copy = std::min(filled, bytes_ - filled);
    AC_TRY(cuda_status(api().MemcpyDtoDAsync(ptr_ + filled, ptr_, copy, nullptr), "cuMemcpyDtoDAsync"));
    filled += copy;
  }
  return cuda_status(api().StreamSynchronize(nullptr), "cuStreamSynchronize");
}

Expected<PinnedBuffer> PinnedBuffer::allocate(size_t bytes) {
  PinnedBuffer buffer;
  if (bytes == 0) return buffer;
  void* host = nullptr;
  AC_CU(api().MemHostAlloc(&host, bytes, 0), "cuMemHostAlloc(" + std::to_string(bytes) + " bytes)");
  buffer.data_ = static_cast<uint8_t*>(host);
  buffer.bytes_ = bytes;
  return buffer;
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) api().MemFreeHost(data_);
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) api().MemFreeHost(data_);
}

Expected<std::unique_ptr<CudaModule>> CudaModule::load(const std::vector<char>& cubin, const std::string& what) {
  std::unique_ptr<CudaModule> module(new CudaModule());
  module->what_ = what;
  AC_CU(api().ModuleLoadData(&module->module_, cubin.data()), "cuModuleLoadData(" + what + ")");
  return module;
}

CudaModule::~CudaModule() {
  if (module_) api().ModuleUnload(module_);
}

Expected<CUfunction> CudaModule::function(const std::string& name) const {
  CUfunction function = nullptr;
  AC_CU(api().ModuleGetFunction(&function, module_, name.c_str()), "cuModuleGetFunction(" + name + " in " + what_ + ")");
  // Kernels compiled with a cluster of more than 8 blocks (sm_90+) launch only with this opt-in; on
  // GPUs without clusters the call fails harmlessly and such kernels are never planned.
  api().FuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  return function;
}

Status launch_kernel(CUfunction function, const std::string& name, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                     unsigned block_x, unsigned shared_bytes, CUstream stream, const void* args, bool programmatic_dependency) {
  if (grid_x == 0 || grid_y == 0 || grid_z == 0) return Status::ok();  // nothing to do (e.g. zero tokens)
  // The 48 KB default limit is on static + dynamic shared memory together, so any dynamic amount may
  // need the opt-in (a kernel with 12 KB static and 40 KB dynamic does). Raised to what this launch
  // asks for only: with every function granted the device's whole allowance when it was resolved,
  // every cluster-launch candidate's admission worker died of SIGSEGV on an H200 (driver 580).
  if (shared_bytes > 0)
    AC_CU(api().FuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared_bytes)),
          "cuFuncSetAttribute(" + name + ", dynamic shared " + std::to_string(shared_bytes) + ")");
  void* params[] = {const_cast<void*>(args)};
  if (programmatic_dependency) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid_x;
    config.gridDimY = grid_y;
    config.gridDimZ = grid_z;
    config.blockDimX = block_x;
    config.blockDimY = 1;
    config.blockDimZ = 1;
    config.sharedMemBytes = shared_bytes;
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return cuda_status(api().LaunchKernelEx(&config, function, params, nullptr), "cuLaunchKernelEx(" + name + ")");
  }
  return cuda_status(api().LaunchKernel(function, grid_x, grid_y, grid_z, block_x, 1, 1, shared_bytes, stream, params, nullptr),
                     "cuLaunchKernel(" + name + ")");
}

Status copy_device(const DeviceBuffer& dst, const DeviceBuffer& src, size_t bytes, CUstream stream) {
  if (bytes > dst.bytes() || bytes > src.bytes()) return error(ErrorCode::kInternal, "device copy past the end of a buffer");
  return cuda_status(api().MemcpyDtoDAsync(dst.ptr(), src.ptr(), bytes, stream), "cuMemcpyDtoDAsync");
}

Expected<CudaEvent> CudaEvent::create() {
  CUevent event = nullptr;
  AC_CU(api().EventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
  return CudaEvent(event);
}

CudaEvent::~CudaEvent() {
  if (event_) api().EventDestroy(event_);
}

Status CudaEvent::record(CUstream stream) { return cuda_status(api().EventRecord(event_, stream), "cuEventRecord"); }

Expected<float> CudaEvent::elapsed_since(const CudaEvent& start) const {
  AC_CU(api().EventSynchronize(event_), "cuEventSynchronize");
  float ms = 0;
  AC_CU(api().EventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace agentcompile::gpu
