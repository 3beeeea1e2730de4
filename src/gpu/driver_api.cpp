// dlopen("libcuda.so.1") and cuGetProcAddress for every entry point the project uses.
#include "gpu/driver_api.h"

#include <dlfcn.h>

#include <mutex>

namespace agentcompile::gpu {

namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

struct Loaded {
  DriverApi api;
  bool ok = false;
  std::string why;
};

Loaded load() {
  Loaded loaded;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    loaded.why = std::string("cannot load the CUDA driver (libcuda.so.1): ") + dlerror();
    return loaded;
  }
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2"));
  if (!get_proc) {
    loaded.why = "the CUDA driver is too old: it has no cuGetProcAddress_v2 (CUDA 12 or newer is needed)";
    return loaded;
  }
  bool all = true;
  auto resolve = [&](const char* name, auto& slot) {
    void* pfn = nullptr;
    if (get_proc(name, &pfn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) != CUDA_SUCCESS || !pfn) {
      if (all) loaded.why = std::string("the CUDA driver lacks ") + name;
      all = false;
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(pfn);
  };
  DriverApi& a = loaded.api;
  resolve("cuInit", a.Init);
  resolve("cuGetErrorName", a.GetErrorName);
  resolve("cuGetErrorString", a.GetErrorString);
  resolve("cuDriverGetVersion", a.DriverGetVersion);
  resolve("cuDeviceGetCount", a.DeviceGetCount);
  resolve("cuDeviceGet", a.DeviceGet);
  resolve("cuDeviceGetName", a.DeviceGetName);
  resolve("cuDeviceGetAttribute", a.DeviceGetAttribute);
  resolve("cuDeviceTotalMem", a.DeviceTotalMem);
  resolve("cuDevicePrimaryCtxRetain", a.DevicePrimaryCtxRetain);
  resolve("cuDevicePrimaryCtxRelease", a.DevicePrimaryCtxRelease);
  resolve("cuCtxSetCurrent", a.CtxSetCurrent);
  resolve("cuStreamCreate", a.StreamCreate);
  resolve("cuStreamDestroy", a.StreamDestroy);
  resolve("cuStreamSynchronize", a.StreamSynchronize);
  resolve("cuMemAlloc", a.MemAlloc);
  resolve("cuMemFree", a.MemFree);
  resolve("cuMemGetInfo", a.MemGetInfo);
  resolve("cuMemcpyHtoD", a.MemcpyHtoD);
  resolve("cuMemcpyDtoH", a.MemcpyDtoH);
  resolve("cuMemcpyDtoDAsync", a.MemcpyDtoDAsync);
  resolve("cuMemsetD8", a.MemsetD8);
  resolve("cuModuleLoadData", a.ModuleLoadData);
  resolve("cuModuleUnload", a.ModuleUnload);
  resolve("cuModuleGetFunction", a.ModuleGetFunction);
  resolve("cuFuncSetAttribute", a.FuncSetAttribute);
  resolve("cuFuncGetAttribute", a.FuncGetAttribute);
  resolve("cuLaunchKernel", a.LaunchKernel);
  resolve("cuEventCreate", a.EventCreate);
  resolve("cuEventDestroy", a.EventDestroy);
  resolve("cuEventRecord", a.EventRecord);
  resolve("cuEventSynchronize", a.EventSynchronize);
  resolve("cuEventElapsedTime", a.EventElapsedTime);
  resolve("cuMemcpyHtoDAsync", a.MemcpyHtoDAsync);
  resolve("cuMemcpyDtoHAsync", a.MemcpyDtoHAsync);
  resolve("cuMemsetD8Async", a.MemsetD8Async);
  resolve("cuMemHostAlloc", a.MemHostAlloc);
  resolve("cuMemFreeHost", a.MemFreeHost);
  resolve("cuMemHostGetDevicePointer", a.MemHostGetDevicePointer);
  resolve("cuEventQuery", a.EventQuery);
  resolve("cuStreamBeginCapture", a.StreamBeginCapture);
  resolve("cuStreamEndCapture", a.StreamEndCapture);
  resolve("cuGraphInstantiateWithFlags", a.GraphInstantiateWithFlags);
  resolve("cuGraphLaunch", a.GraphLaunch);
  resolve("cuGraphExecDestroy", a.GraphExecDestroy);
  resolve("cuGraphDestroy", a.GraphDestroy);
  resolve("cuGraphGetNodes", a.GraphGetNodes);
  resolve("cuLaunchKernelEx", a.LaunchKernelEx);
  resolve("cuDeviceCanAccessPeer", a.DeviceCanAccessPeer);
  resolve("cuCtxEnablePeerAccess", a.CtxEnablePeerAccess);
  loaded.ok = all;
  return loaded;
}

}  // namespace

const DriverApi* driver_api(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

}  // namespace agentcompile::gpu
