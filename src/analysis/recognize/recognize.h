// Recognition: raises the primitive sequences of graphs captured from PyTorch (core ATen's vocabulary,
// docs/capture.md) to the semantic ops the graph builders write and the kernel families implement
// (rmsnorm, linear, silu, gelu, softmax, rope, kv_append, attention), so that the same template
// families and fusions apply to captured and hand-built graphs. What no rule recognizes stays valid
// primitive IR and compiles through the generic families.
//
// The passes (one rule per file in this folder, each opening with its pattern) run in this order:
//   phase 1, repeated until a whole round changes nothing:
//     simplify, drop_unit_batch, sink_transposes, raise_linear, raise_rmsnorm, raise_softmax, raise_activations,
//     raise_rope, raise_kv_append, raise_cache_attention, split_fused_projections, sink_slices
//   phase 2, once: hoist_weight_expressions (weight-only subgraphs move to @init), lower_sdpa (an
//     attention that is not over the cache becomes matmul/softmax primitives), split_long_reductions,
//     reduce_without_transposes, reshape_pointwise_inputs, widen_divided_sums, then phase 1 again
//   phase 3, once: recompute_widening_casts (after the last common-subexpression elimination, which would
//     merge its copies), schedule_module (canonical node order per function, canonical parameter order)
// Simplification comes first in every round so each rule sees canonical layouts; attention comes
// after RoPE and KV append because it reads their results; slices sink last so the norms they cross
// are already raised. The result passes ir::verify_module; a module the graph builders wrote comes
// back unchanged (their output is the fixed point every rule aims at).
//
// What the raised module may contain that a built one never does, and its runtime must handle:
//   - a function @init() and parameters named init.* (weight-only expressions such as Gemma's 1 + w):
//     @init returns one result per init.* parameter, in their declaration order; run it once at load
//     and bind each result to its parameter (hoist_weights.cpp documents the convention);
//   - parameter aliases (ParamDecl::alias_of / alias_row): rows of a fused weight such as Phi-3's
//     qkv_proj, read without a copy (fused_projection.cpp).
// Raised nodes keep the source location of the node they replace.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::analysis {

struct RecognizeReport {
  std::vector<std::pair<std::string, int>> fired;  // per pass, rewrites made (passes that made none are left out)
  std::vector<std::string> notes;                  // what stayed primitive and why, in words
};

Expected<ir::Module> recognize_module(ir::Module module, RecognizeReport* report = nullptr);

}  // namespace agentcompile::analysis
