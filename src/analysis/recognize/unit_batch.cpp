// Pass: drop the unit batch dim (rule 1, canonicalization).
//
// A captured LM computes on [1, T, H] (torch's batch of one) with views to [T, H] around its matmuls;
// the builders compute on [T, H] and [T, NH, D]. This pass removes the leading static 1 from every value
// where all of its readers and its producer agree, so captured values live at the builders' ranks.
//
// Algorithm: the set S of values to squeeze is the greatest fixed point of local constraints.
//   1. Candidates: node results of rank >= 2 whose first dim is a static 1 and that the function does
//      not return (arguments and results keep their types).
//   2. Each node ties its result to some operands ("they are squeezed together or not at all"):
//        reshape/view                  nothing: a reshape absorbs any change of its input or output
//        constant                      nothing: its shape attribute loses the dim
//        unary pointwise, cast         {result, x}
//        binary pointwise, where,      {result, every operand of the result's rank}; operands of a
//        broadcast                      lower rank broadcast from the right and are unaffected
//        reductions, scans, softmax,   {result, x} when the axis is not 0 (the unit dim itself)
//        slice, flip, index_select,
//        rmsnorm, layer_norm, linear
//        concat                        {result, every operand} when the axis is not 0
//        transpose                     {result, x} when perm[0] == 0 (the unit dim stays first)
//        matmul                        {result, a, b} when rank >= 3
//        sdpa                          {result, q, k, v, a mask of q's rank} when rank >= 4
//        anything else                 pins its result and operands (never squeezed)
//      A tie with a member outside S removes all of its members; repeat until nothing changes.
//   3. Rebuild: values in S lose their first dim; reshape/broadcast/constant shapes drop their first
//      entry, transposes drop perm[0], non-negative axes shift down by one (negative ones are already
//      relative to the end). Reshapes that became identities are left to simplify.
// Refuses (keeps the dim) wherever a single reader or the producer cannot follow, e.g. a 2-D matmul
// of a decode step's [1, K] row, an embedding's ids, anything the function returns.
#include <set>

#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpClass;
using ir::OpKind;
using ir::ValueId;

namespace {

bool has_axis_attr(OpKind op) {
  switch (ir::op_info(op).op_class) {
    case OpClass::kReduction:
    case OpClass::kSoftmax:
    case OpClass::kScan: return true;
    default: return op == OpKind::kSlice || op == OpKind::kFlip || op == OpKind::kIndexSelect || op == OpKind::kConcat;
  }
}

// The values node `node` ties together, or nullopt when it pins its result and operands.
std::optional<std::vector<ValueId>> tie(const ir::Function& f, const ir::Node& node) {
  const size_t rank = f.type(node.result).shape.size();
  std::vector<ValueId> group{node.result};
  auto same_rank_operands = [&]() {
    for (ValueId operand : node.operands)
      if (f.type(operand).shape.size() == rank) group.push_back(operand);
  };
  if (node.op == OpKind::kReshape || node.op == OpKind::kView || node.op == OpKind::kConstant) return std::vector<ValueId>{};
  if (node.op == OpKind::kSdpa) {
    if (f.type(node.operands[0]).shape.size() < 4) return std::nullopt;
    same_rank_operands();
    return group;
  }
  if (node.op == OpKind::kMatmul) {
    if (rank < 3) return std::nullopt;
    same_rank_operands();
    return group;
  }
  if (node.op == OpKind::kTranspose) {
    if (perm_of(node).at(0) != 0) return std::nullopt;
    group.push_back(node.operands[0]);
    return group;
  }
  if (has_axis_attr(node.op)) {
    const size_t in_rank = f.type(node.operands[0]).shape.size();
    if (normalize_axis(node.int_attr("axis", -1), in_rank) == 0) return std::nullopt;
    if (node.op == OpKind::kConcat)
      group.insert(group.end(), node.operands.begin(), node.operands.end());
    else
      group.push_back(node.operands[0]);
    return group;
  }
  if (node.op == OpKind::kRmsNorm || node.op == OpKind::kLayerNorm || node.op == OpKind::kLinear) {
    group.push_back(node.operands[0]);
    return group;
  }
  if (ir::op_info(node.op).op_class == OpClass::kPointwise || node.op == OpKind::kBroadcast) {
    same_rank_operands();
    return group;
  }
  return std::nullopt;
}

std::set<ValueId> squeezable(const ir::Function& f) {
  std::set<ValueId> s;
  std::set<ValueId> results(f.results.begin(), f.results.end());
  for (const ir::Node& node : f.nodes) {
    const ir::Shape& shape = f.type(node.result).shape;
    if (shape.size() >= 2 && is_unit(shape[0]) && !results.count(node.result) && node.op != OpKind::kWeight)
      s.insert(node.result);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const ir::Node& node : f.nodes) {
      auto group = tie(f, node);
      std::vector<ValueId> members;
      if (group) {
        members = *group;
        bool all_in = true;
        for (ValueId v : members) all_in = all_in && s.count(v);
        if (all_in) continue;
      } else {
        members = node.operands;
        members.push_back(node.result);
      }
      for (ValueId v : members) changed |= s.erase(v) > 0;
    }
  }
  return s;
}

ir::Shape drop_first(const ir::Shape& shape) { return ir::Shape(shape.begin() + 1, shape.end()); }

}  // namespace

Expected<int> drop_unit_batch(ir::Module& module) {
  int fired = 0;
  for (ir::Function& function : module.functions) {
    const std::set<ValueId> s = squeezable(function);
    if (s.empty()) continue;
    Rewriter rw(module, function);
    for (const ir::Node& node : function.nodes) {
      rw.set_loc(node.loc);
      std::vector<ValueId> ops;
      for (ValueId operand : node.operands) ops.push_back(rw.map(operand));
      ir::Attrs attrs = node.attrs;
      ValueId replacement = ir::kNoValue;
      if (!s.count(node.result)) {
        replacement = rw.emit(node.op, ops, attrs);
      } else if (node.op == OpKind::kReshape || node.op == OpKind::kView) {
        replacement = rw.reshape(ops[0], drop_first(node.dims_attr("shape")));
      } else {
        if (node.op == OpKind::kBroadcast || node.op == OpKind::kConstant) attrs["shape"] = drop_first(node.dims_attr("shape"));
        if (node.op == OpKind::kTranspose) {
          const auto perm = perm_of(node);
          std::vector<int64_t> inner;
          for (size_t i = 1; i < perm.size(); ++i) inner.push_back(perm[i] - 1);
          attrs = perm_attrs(inner);
        }
        if (has_axis_attr(node.op) && node.int_attr("axis", -1) > 0) attrs["axis"] = node.int_attr("axis") - 1;
        replacement = rw.emit(node.op, ops, attrs);
      }
      if (!rw.status().is_ok()) return rw.status().with_context("drop_unit_batch in function @" + function.name);
      rw.set_map(node.result, replacement);
    }
    fired += static_cast<int>(s.size());
    function = clean_function(rw.finish());
  }
  return fired;
}

}  // namespace agentcompile::analysis::recognize
