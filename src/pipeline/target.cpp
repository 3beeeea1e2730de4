// The target: the GPU here (probed: its architecture, SMs, L2 and shared memory override the named
// profile of its generation), or a named profile (compile only: nothing is validated or timed), or,
// without a GPU or with --no-gpu, the h200 profile with a line saying that candidates will be
// compiled but not validated or measured.
#include "pipeline/stages.h"
#include "gpu/device_probe.h"

namespace agentcompile::pipeline {

Expected<Target> choose_target(const CompileOptions& options, const ProgressFn& say) {
  Target target;
  plan::DeviceProfile& profile = target.profile;
  if (!options.device_profile.empty()) {
    AC_ASSIGN_OR_RETURN(profile, plan::named_device_profile(options.device_profile));
    target.device = {{"name", profile.name}, {"arch", profile.arch}, {"source", "named profile"}};
    say("target: named profile " + profile.name + " (" + profile.arch + "): compile only, no validation or timing");
    return target;
  }
  auto probed = options.no_gpu ? Expected<gpu::DeviceInfo>(error(ErrorCode::kUnsupported, "--no-gpu")) : gpu::probe_device();
  if (!probed) {
    AC_ASSIGN_OR_RETURN(profile, plan::named_device_profile("h200"));
    target.device = {{"name", profile.name}, {"arch", profile.arch}, {"source", "default profile (no GPU)"}};
    say("no GPU (" + probed.status().message() + "): planning for h200 (" + profile.arch +
        "); candidates will be compiled but not validated or measured");
    return target;
  }
  target.gpu = true;
  AC_ASSIGN_OR_RETURN(profile, plan::named_device_profile(probed->sm_major == 8 ? "a100" : "h200"));
  profile.name = probed->name;
  profile.arch = gpu::nvrtc_arch(*probed);
  profile.multiprocessors = probed->multiprocessors;
  profile.l2_bytes = probed->l2_bytes;
  profile.shared_per_block_optin = probed->shared_per_block_optin;
  profile.from_device = true;
  target.device = {{"name", probed->name}, {"arch", profile.arch}, {"source", "probed"}, {"multiprocessors", probed->multiprocessors},
                   {"l2_bytes", probed->l2_bytes}, {"driver_version", probed->driver_version}};
  say("target: " + probed->name + " (" + profile.arch + ")");
  return target;
}

}  // namespace agentcompile::pipeline
