// Following what each axis holds through a chain of layout ops.
//
// RoPE and attention recognition must know which axis of a value carries the positions, the heads or
// the cache rows after torch's unsqueezes, expands, permutes and views. A caller labels the axes of a
// source value with kinds of its own (small positive ints; kUnitAxis for a static 1), and forward_axes
// replays a layout op: a transpose permutes the labels, a broadcast labels the axes it stretches
// kStretchedAxis, a reshape may add or drop unit axes and may merge an axis with stretched axes that
// follow it (torch's repeat_kv: [KV, 1] expanded to [KV, n] and viewed as KV*n heads, kv-major); any
// other reshape mixes axes and ends the replay (empty result).
#pragma once

#include <vector>

#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

using AxisKinds = std::vector<int>;
constexpr int kUnitAxis = 0;
constexpr int kStretchedAxis = -1;

// The kinds of a layout node's result given its operand's; empty when the node mixes axes.
AxisKinds forward_axes(const ir::Function& f, const ir::Node& node, const AxisKinds& in);

bool is_layout_step(ir::OpKind op);

// Follows reshape/view/broadcast/transpose nodes back from `value`; returns the first value that is
// not one, and appends the nodes passed to `chain`, outermost first.
ir::ValueId strip_layout(const ir::Function& f, ir::ValueId value, std::vector<const ir::Node*>& chain);

// Replays `chain` (outermost first, as strip_layout collects it) from the innermost node outwards.
AxisKinds replay_axes(const ir::Function& f, const std::vector<const ir::Node*>& chain, AxisKinds kinds);

}  // namespace agentcompile::analysis::recognize
