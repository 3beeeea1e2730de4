// The canonical parameter order (the last step of rule 12).
//
// Parameter names are paths (model.layers.0.self_attn.q_proj.weight). They are ordered as a tree of
// their dotted components: the children of a component are ordered by first use (the first weight
// node reading any parameter below them, over the functions in module order) — except when every
// child is a leaf module (a component whose children are parameters: q_proj with weight and bias) or
// a parameter: then the matrices a linear, matmul or embedding reads come first and the rest (norm
// weights) after them, each part by first use. Unused parameters come last, in declaration order.
// Whatever order the capture declares its parameters in (torch's state_dict order or first use),
// a Hugging Face decoder comes out in the builders' order: embed_tokens, then per layer
// input_layernorm, self_attn.{q,k,v,o}_proj, q_norm, k_norm, post_attention_layernorm,
// mlp.{gate,up,down}_proj, then norm and lm_head.
// Derived parameters follow the parameter they come from, in declaration order: an alias follows the
// parameter it aliases, init.<name>.<k> (hoist_weights.cpp) follows <name>. @init's results are
// reordered with the init.* parameters, keeping its convention (results in their declaration order).
#pragma once

#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

// Reorders module.params (and @init's results); returns whether anything moved.
bool order_parameters(ir::Module& module);

}  // namespace agentcompile::analysis::recognize
