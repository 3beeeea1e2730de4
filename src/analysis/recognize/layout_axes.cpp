// Axis kinds through layout ops (see layout_axes.h).
#include "analysis/recognize/layout_axes.h"

#include "analysis/recognize/match.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;

bool is_layout_step(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kView || op == OpKind::kBroadcast || op == OpKind::kTranspose;
}

namespace {

// A reshape that adds/drops unit axes and merges an axis with the stretched axes after it.
AxisKinds reshape_axes(const ir::Shape& from, const ir::Shape& to, const AxisKinds& in) {
  std::vector<size_t> kept_in, kept_out;
  for (size_t i = 0; i < from.size(); ++i)
    if (!is_unit(from[i])) kept_in.push_back(i);
  for (size_t i = 0; i < to.size(); ++i)
    if (!is_unit(to[i])) kept_out.push_back(i);
  AxisKinds out(to.size(), kUnitAxis);
  size_t k = 0;
  for (size_t axis : kept_out) {
    if (k >= kept_in.size()) return {};
    const ir::Dim& want = to[axis];
    ir::Dim have = from[kept_in[k]];
    out[axis] = in[kept_in[k]];
    ++k;
    // Merge following stretched axes while the sizes multiply up to the output axis.
    while (have != want && k < kept_in.size() && in[kept_in[k]] == kStretchedAxis && have.is_static() &&
           from[kept_in[k]].is_static() && want.is_static()) {
      have = ir::Dim::of(have.value * from[kept_in[k]].value);
      ++k;
    }
    if (have != want) return {};
  }
  if (k != kept_in.size()) return {};
  return out;
}

}  // namespace

AxisKinds forward_axes(const ir::Function& f, const ir::Node& node, const AxisKinds& in) {
  const ir::Shape& from = f.type(node.operands[0]).shape;
  const ir::Shape& to = f.type(node.result).shape;
  if (in.size() != from.size()) return {};
  if (node.op == OpKind::kTranspose) {
    AxisKinds out;
    for (int64_t p : perm_of(node)) out.push_back(in[static_cast<size_t>(p)]);
    return out;
  }
  if (node.op == OpKind::kBroadcast) {
    AxisKinds out(to.size(), kUnitAxis);
    const size_t offset = to.size() - from.size();
    for (size_t i = 0; i < to.size(); ++i) {
      const bool stretched = i < offset || (is_unit(from[i - offset]) && !is_unit(to[i]));
      if (stretched)
        out[i] = is_unit(to[i]) ? kUnitAxis : kStretchedAxis;
      else
        out[i] = in[i - offset];
    }
    return out;
  }
  return reshape_axes(from, to, in);
}

ir::ValueId strip_layout(const ir::Function& f, ir::ValueId value, std::vector<const ir::Node*>& chain) {
  while (const ir::Node* node = producer(f, value)) {
    if (!is_layout_step(node->op)) break;
    chain.push_back(node);
    value = node->operands[0];
  }
  return value;
}

AxisKinds replay_axes(const ir::Function& f, const std::vector<const ir::Node*>& chain, AxisKinds kinds) {
  for (auto it = chain.rbegin(); it != chain.rend() && !kinds.empty(); ++it) kinds = forward_axes(f, **it, kinds);
  return kinds;
}

}  // namespace agentcompile::analysis::recognize
