// The recognition passes, in the order recognize_module runs them (see recognize.h). Each opens its
// own file with the pattern it matches and what it refuses; each returns how many rewrites it made
// (0 when the module is unchanged), or an error naming the pass and function when a rewrite could
// not be typed (a bug in the rule, never a property of the input).
#pragma once

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

// Rule 1: canonicalization — dead code, common subexpressions, layout chains, identity ops, exact
// cast pairs, constant folding (simplify.cpp); the unit batch dim dropped (unit_batch.cpp);
// transposes moved past row-wise ops toward the permute that undoes them (sink_transposes.cpp).
Expected<int> simplify(ir::Module& module);
Expected<int> drop_unit_batch(ir::Module& module);
Expected<int> sink_transposes(ir::Module& module);
// Rule 2: matmul(x, transpose(w)) (+ bias) -> linear.
Expected<int> raise_linear(ir::Module& module);
// Rule 3: the RMSNorm decomposition -> rmsnorm.
Expected<int> raise_rmsnorm(ir::Module& module);
// Rule 4: amax/sub/exp/sum/div -> softmax, and the log_softmax decomposition -> log_softmax.
Expected<int> raise_softmax(ir::Module& module);
// Rule 5: x*sigmoid(x) -> silu; the erf and tanh GELU formulas -> gelu.
Expected<int> raise_activations(ir::Module& module);
// Rule 6: rotate-half rotary embedding with cos/sin tables from an inline inv_freq -> rope.
Expected<int> raise_rope(ir::Module& module);
// Rule 7: index_copy into a state at pos + arange(T) -> kv_append.
Expected<int> raise_kv_append(ir::Module& module);
// Rule 8: attention over the KV cache (sdpa with the causal cache mask, or its matmul/softmax form)
// -> attention; any other sdpa is lowered to primitives once nothing else applies.
Expected<int> raise_cache_attention(ir::Module& module);
Expected<int> lower_sdpa(ir::Module& module);
// A lowering after it: a reduction over a last axis of more than 2^24 elements -> two reductions
// over a view of the axis as [a, b] (split_reductions.cpp).
Expected<int> split_long_reductions(ir::Module& module);
// Then a reduction of every axis but one, read through a transpose that moves that axis to the front,
// reduces the axes after it and then those before it, moving no data (transposed_reductions.cpp).
Expected<int> reduce_without_transposes(ir::Module& module);
// Then a reshape read only by reductions moves onto the inputs of the pointwise chain before it, so the
// chain and the reduction form one region (reshaped_reductions.cpp).
Expected<int> reshape_pointwise_inputs(ir::Module& module);
// And one after that: a 16-bit float sum read only as a division's numerator is summed and divided in
// f32, then rounded once (divided_sums.cpp).
Expected<int> widen_divided_sums(ir::Module& module);
// The last lowering, after the final canonicalization: a widening cast of a 16-bit float read by a
// reduction and by other ops gets a copy per reader, so no region writes the widened tensor for another
// to read (shared_casts.cpp).
Expected<int> recompute_widening_casts(ir::Module& module);
// Rule 9: weight-only expressions -> parameters computed once by @init.
Expected<int> hoist_weight_expressions(ir::Module& module);
// Rule 10: a linear read only through slices that partition its outputs -> one linear per slice on
// parameter aliases of the fused weight's rows.
Expected<int> split_fused_projections(ir::Module& module);
// Rule 11: slices sink through row-wise ops toward their producers (the last-token slice before the
// final norm).
Expected<int> sink_slices(ir::Module& module);
// Rule 12: the canonical schedule of every function and the canonical parameter order.
Expected<int> schedule_module(ir::Module& module);

}  // namespace agentcompile::analysis::recognize
