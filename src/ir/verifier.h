// The verifier: a module is well formed when every value is defined once before its uses, every
// node's declared type equals the inferred one, every weight names a declared parameter, results
// exist, and side effects are ordered: each KV-cache state is appended at most once per function,
// and any attention reading a cache reads the value its kv_append returned (in the per-row form of
// decode_batch, with the same per-row pos and base the kv_append wrote with).
#pragma once

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::ir {

// Errors name the function, the value and what is wrong.
Status verify_module(const Module& module);
Status verify_function(const Module& module, const Function& function);

}  // namespace agentcompile::ir
