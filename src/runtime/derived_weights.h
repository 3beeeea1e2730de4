// Parameters computed once when the weights load. The recognizer hoists expressions of weights alone
// (Gemma's RMSNorm weight 1 + w, a sum of two biases) out of the per-token graph into a module function
// @init() whose results are new parameters: it returns one result per parameter named "init.*", in the
// order those parameters are declared (analysis/recognize/hoist_weights.cpp). The runtime runs @init
// here, on the CPU reference interpreter (exact f32, once per load), and uploads what it returns like
// any weight. A module without @init derives nothing.
#pragma once

#include <memory>

#include "agentcompile/status.h"
#include "frontend/weights.h"
#include "ir/graph.h"

namespace agentcompile::runtime {

constexpr const char* kInitFunction = "init";

// The parameters @init defines, computed from `store`; null when the module has no @init. Errors name
// the parameter or the @init node at fault.
Expected<std::unique_ptr<frontend::MemoryStore>> compute_derived_weights(const ir::Module& module, const frontend::WeightStore& store);

}  // namespace agentcompile::runtime
