// Named device profiles (figures from the vendors' datasheets; limits from the CUDA programming guide).
#include "plan/device_profile.h"

namespace agentcompile::plan {

const std::vector<std::string>& named_device_profiles() {
  static const std::vector<std::string> names = {"h100", "h200", "a100"};
  return names;
}

Expected<DeviceProfile> named_device_profile(const std::string& name) {
  DeviceProfile p;
  p.name = name;
  if (name == "h100" || name == "h200") {
    p.sm_major = 9;
    p.sm_minor = 0;
    p.arch = "sm_90a";
    p.multiprocessors = 132;
    p.shared_per_block_optin = 232448;
    p.shared_per_sm = 233472;
    p.l2_bytes = name == "h100" ? 50 * 1024 * 1024 : 60 * 1024 * 1024;
    p.memory_bandwidth_gbs = name == "h100" ? 3350 : 4800;
    p.tensor_tflops_f16 = 990;
    return p;
  }
  if (name == "a100") {
    p.sm_major = 8;
    p.sm_minor = 0;
    p.arch = "sm_80";
    p.multiprocessors = 108;
    p.shared_per_block_optin = 166912;
    p.shared_per_sm = 167936;
    p.l2_bytes = 40 * 1024 * 1024;
    p.memory_bandwidth_gbs = 2039;
    p.tensor_tflops_f16 = 312;
    return p;
  }
  return error(ErrorCode::kInvalidArgument, "unknown device profile '" + name + "' (known: h100, h200, a100)");
}

}  // namespace agentcompile::plan
