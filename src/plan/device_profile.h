// What the planner knows about a GPU: limits that decide which candidates can run, and the rates
// that rank them. Read from the device when there is one, or taken from a named profile (h100,
// h200, a100) when compiling on a machine without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::plan {

struct DeviceProfile {
  std::string name;             // "h200" or the device's own name
  int sm_major = 9;
  int sm_minor = 0;
  std::string arch;             // NVRTC target: "sm_90a", "sm_80"
  int multiprocessors = 132;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  int64_t shared_per_block_optin = 232448;  // bytes a block may have after opting in
  int64_t shared_per_sm = 233472;
  int64_t l2_bytes = 50 * 1024 * 1024;
  double memory_bandwidth_gbs = 3350;  // vendor figure; measured copy bandwidth is taken at tune time
  double tensor_tflops_f16 = 990;
  bool from_device = false;     // read from cudaGetDeviceProperties, not a named profile

  int sm() const { return sm_major * 10 + sm_minor; }
  bool has_wgmma() const { return sm_major == 9 && arch == "sm_90a"; }
};

// Named profiles: h100, h200, a100.
Expected<DeviceProfile> named_device_profile(const std::string& name);
const std::vector<std::string>& named_device_profiles();

}  // namespace agentcompile::plan
