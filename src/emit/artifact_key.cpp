// The artifact's key (see artifact_key.h).
#include "emit/artifact_key.h"

#include "support/sha256.h"

namespace agentcompile::emit {

std::string artifact_key(const ArtifactKeyParts& p) {
  support::Sha256 key;
  key.update(p.compiler_version).update(p.ir_text).update(p.arch).update(p.device_profile)
      .update(p.nvrtc_version).update(p.options.dump()).update(p.gpu ? "gpu" : "nogpu")
      .update(p.kernel_headers_hash).update(p.run_sizes).update(p.compiler_sources_hash);
  for (const auto& kernel : p.runtime_kernels) key.update(kernel);  // artifacts without them are not reused
  return key.hex();
}

}  // namespace agentcompile::emit
