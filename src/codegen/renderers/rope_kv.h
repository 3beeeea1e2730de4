// The rope_kv kernel's source, which the attention reference family's prologue renders too.
#pragma once

#include <string>
#include <vector>

#include "plan/families/rope_kv.h"

namespace agentcompile::codegen {

// One kernel named `kernel` (src/kernels/rope_kv.cuh), with its inv_freq table; no producer wait.
std::string render_rope_kv_kernel(const plan::RopeKvConfig& config, const std::string& kernel);

}  // namespace agentcompile::codegen
