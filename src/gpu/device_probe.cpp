// The device probes (see device_probe.h).
#include "gpu/device_probe.h"

#include <nlohmann/json.hpp>

#include "gpu/gpu_worker.h"

namespace agentcompile::gpu {

using json = nlohmann::json;

Expected<DeviceInfo> probe_device() {
  AC_ASSIGN_OR_RETURN(std::string text, run_forked([]() -> Expected<std::string> {
    AC_ASSIGN_OR_RETURN(auto ctx, CudaContext::create());
    const DeviceInfo& i = ctx->info();
    return json{{"name", i.name}, {"sm_major", i.sm_major}, {"sm_minor", i.sm_minor}, {"multiprocessors", i.multiprocessors},
                {"total_memory", i.total_memory}, {"l2_bytes", i.l2_bytes}, {"shared_per_block_optin", i.shared_per_block_optin},
                {"driver_version", i.driver_version}}.dump();
  }, 120));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return error(ErrorCode::kInternal, "device probe returned malformed JSON");
  DeviceInfo info;
  info.name = j.value("name", "");
  info.sm_major = j.value("sm_major", 0);
  info.sm_minor = j.value("sm_minor", 0);
  info.multiprocessors = j.value("multiprocessors", 0);
  info.total_memory = j.value("total_memory", int64_t{0});
  info.l2_bytes = j.value("l2_bytes", int64_t{0});
  info.shared_per_block_optin = j.value("shared_per_block_optin", int64_t{0});
  info.driver_version = j.value("driver_version", 0);
  return info;
}

Expected<DeviceInfo> device_here() {
  if (!cuda_initialized_in_process()) return probe_device();
  AC_ASSIGN_OR_RETURN(auto context, CudaContext::create());
  return context->info();
}

std::string nvrtc_arch(const DeviceInfo& info) {
  if (info.sm_major == 9 && info.sm_minor == 0) return "sm_90a";
  return "sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor);
}

Expected<double> measure_copy_bandwidth_gbs(size_t bytes) {
  AC_ASSIGN_OR_RETURN(std::string text, run_forked([bytes]() -> Expected<std::string> {
    AC_ASSIGN_OR_RETURN(auto ctx, CudaContext::create());
    AC_ASSIGN_OR_RETURN(DeviceBuffer a, DeviceBuffer::allocate(bytes));
    AC_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(bytes));
    AC_TRY(a.fill_bytes(1));
    AC_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::create());
    AC_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::create());
    AC_TRY(copy_device(b, a, bytes, ctx->stream()));
    AC_TRY(ctx->synchronize());
    constexpr int kReps = 10;
    AC_TRY(start.record(ctx->stream()));
    for (int i = 0; i < kReps; ++i) AC_TRY(copy_device(i % 2 ? a : b, i % 2 ? b : a, bytes, ctx->stream()));
    AC_TRY(stop.record(ctx->stream()));
    AC_ASSIGN_OR_RETURN(float ms, stop.elapsed_since(start));
    return std::to_string(2.0 * static_cast<double>(bytes) * kReps / (ms * 1e-3) / 1e9);
  }, 120));
  return std::stod(text);
}

}  // namespace agentcompile::gpu
