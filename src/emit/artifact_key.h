// The artifact's key: the SHA-256 of everything a compile's result depends on, so that a warm
// compile (artifact_cache.h) reuses an artifact only when compiling again would produce it. Keys and
// URLs of the advisor never enter it (the options are the result-shaping ones only).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace agentcompile::emit {

struct ArtifactKeyParts {
  std::string compiler_version;     // the pipeline's version: bumped when picks may change
  std::string ir_text;              // the module compiled, printed without source locations
  std::string arch;                 // the NVRTC target
  std::string device_profile;       // the named profile asked for ("" : the GPU here)
  std::string nvrtc_version;
  nlohmann::json options;           // the options that change what a compile produces
  bool gpu = false;                 // validated and measured, or compiled only
  std::string kernel_headers_hash;  // the kernel templates compiled from
  std::string compiler_sources_hash;  // the planner, renderers, tuner... the compiler was built from
  std::string run_sizes;            // a captured module's functions' sizes: "forward:T=4096;"
  std::vector<std::string> runtime_kernels;  // the runtime's own kernels the artifact must hold
};

// The parts hashed in this order with no separators, as the compiler always has: another order or
// encoding would make every existing artifact and cache entry miss.
std::string artifact_key(const ArtifactKeyParts& parts);

}  // namespace agentcompile::emit
