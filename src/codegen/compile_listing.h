// What NVRTC made of a region's candidates as text, for --dump-ir (the listing after generate) and
// golden tests: per candidate compiled, failed (with the first line of NVRTC's log) or a library
// call with nothing to compile. Whether a cubin came from the cache is left out: it differs between
// two compiles of the same model.
#pragma once

#include <string>
#include <vector>

#include "codegen/nvrtc_compiler.h"
#include "plan/planner.h"

namespace agentcompile::codegen {

// `compiled` holds one result per candidate of `plan` (an empty one for library-only candidates).
std::string describe_compiles(const plan::RegionPlan& plan, const std::vector<CompileResult>& compiled);

}  // namespace agentcompile::codegen
