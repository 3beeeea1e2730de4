// Pass: simplify (rule 1, canonicalization).
//
// One forward rebuild of each function. At every node, with its operands already simplified, the
// first of these that applies replaces it (looking at the producers in the NEW function, so chains
// collapse in one walk):
//   view(x)                          -> reshape(x)            (same meaning on row-major tensors; the
//                                                              builders write reshape)
//   reshape(x) to x's shape          -> x;   reshape(reshape(z))       -> reshape(z)
//   transpose(x) by the identity     -> x;   transpose(transpose(z))   -> transpose(z) by the composition;
//                                            a transpose that only moves unit dims -> reshape (a decode
//                                            step's [1, NH, D] <-> [NH, 1, D])
//   broadcast(x) to x's shape        -> x;   broadcast(broadcast(z))   -> broadcast(z)
//   slice(x) of a whole static axis  -> x
//   cast(x) to x's dtype             -> x (unless the function returns it: the builders convert their
//                                            logits with a cast even when it is one, and a returned
//                                            linear gets such a cast too, so f32 models print alike);
//                                            cast(cast(z: A->B)->C)    -> cast(z: A->C) when A->B is exact
//                                            (f16/bf16 -> f32, bool -> any), so cast(cast(x:f16->f32)->f16) = x
//   mul(x, 1) / mul(1, x) / div(x, 1) -> x   when x already has the result's shape (exact in IEEE)
//   constant {values = [v, v, ...]}  -> constant {value = v}   (one spelling per splat)
//   an op over constants only        -> one constant (fold_constants.h: small, static, torch's rounding)
//   a pure op equal to an earlier one (same op, operands, attributes) -> the earlier result (CSE;
//                                            constants and aranges included; weight nodes are not
//                                            merged: the canonical form reads a weight once per reader)
// Then dead code is removed (side effects are never dead). Nothing here changes a value's type.
#include <unordered_map>

#include "analysis/recognize/fold_constants.h"
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::DType;
using ir::OpKind;
using ir::ValueId;

namespace {

// Casting A -> B loses nothing, so a cast from B onwards may start from A instead.
bool exact_cast(DType from, DType to) {
  if (from == to || from == DType::kBool) return true;
  return (from == DType::kF16 || from == DType::kBF16) && to == DType::kF32;
}

// What a reshape of `value` may read instead: the start of the chain of reshapes that made it.
ValueId reshape_source(const Rewriter& rw, ValueId value) {
  while (const ir::Node* inner = rw.producer(value)) {
    if (inner->op != OpKind::kReshape && inner->op != OpKind::kView) break;
    value = inner->operands[0];
  }
  return value;
}

// The one value of a constant node that lists equal values.
std::optional<double> listed_splat(const ir::Node& node) {
  const ir::FloatList values = node.floats_attr("values");
  if (values.empty()) return std::nullopt;
  for (double v : values)
    if (!(v == values[0])) return std::nullopt;
  return values[0];
}

// The non-unit dims keep their relative order: the transpose moves no data.
bool moves_only_unit_dims(const ir::Shape& shape, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (is_unit(shape[static_cast<size_t>(p)])) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

bool is_one(const ir::Function& f, ValueId value) {
  const auto constant = splat_constant(f, value);
  return constant && *constant == 1.0;
}

// The replacement of `node` (operands already mapped to `ops`), or kNoValue when no rule applies.
ValueId fold(Rewriter& rw, const ir::Node& node, const std::vector<ValueId>& ops, const ir::TensorType& result, bool returned) {
  const ir::Function& f = rw.current();
  switch (node.op) {
    case OpKind::kReshape:
    case OpKind::kView: {
      const ir::Shape target = node.dims_attr("shape");
      const ValueId source = reshape_source(rw, ops[0]);
      if (source != ops[0] || rw.type(source).shape == target || node.op == OpKind::kView) return rw.reshape(source, target);
      break;
    }
    case OpKind::kTranspose: {
      const auto perm = perm_of(node);
      if (perm == identity_perm(perm.size())) return ops[0];
      const ir::Node* inner = rw.producer(ops[0]);
      if (inner && inner->op == OpKind::kTranspose) {
        const auto first = perm_of(*inner);
        std::vector<int64_t> composed(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) composed[i] = first[static_cast<size_t>(perm[i])];
        const ValueId source = inner->operands[0];
        return composed == identity_perm(composed.size()) ? source : rw.transpose(source, composed);
      }
      if (moves_only_unit_dims(rw.type(ops[0]).shape, perm)) return rw.reshape(reshape_source(rw, ops[0]), result.shape);
      break;
    }
    case OpKind::kBroadcast: {
      const ir::Shape target = node.dims_attr("shape");
      if (rw.type(ops[0]).shape == target) return ops[0];
      const ir::Node* inner = rw.producer(ops[0]);
      if (inner && inner->op == OpKind::kBroadcast) {
        const ValueId source = inner->operands[0];
        if (rw.type(source).shape == target) return source;
        return rw.emit(OpKind::kBroadcast, {source}, {{"shape", target}});
      }
      break;
    }
    case OpKind::kSlice: {
      const ir::Shape& shape = rw.type(ops[0]).shape;
      const int64_t axis = normalize_axis(node.int_attr("axis"), shape.size());
      const ir::Dim& dim = shape[static_cast<size_t>(axis)];
      const int64_t start = node.int_attr("start");
      const bool from_start = start == 0 || (dim.is_static() && start == -dim.value);
      if (dim.is_static() && from_start && node.int_attr("length") == dim.value) return ops[0];
      break;
    }
    case OpKind::kCast: {
      const DType to = result.dtype;
      if (rw.type(ops[0]).dtype == to) return returned ? ir::kNoValue : ops[0];
      const ir::Node* inner = rw.producer(ops[0]);
      if (inner && inner->op == OpKind::kCast) {
        const ValueId source = inner->operands[0];
        if (exact_cast(rw.type(source).dtype, rw.type(ops[0]).dtype)) return rw.cast(source, to);
      }
      break;
    }
    case OpKind::kConstant:
      if (node.has_attr("values")) {
        if (const auto splat = listed_splat(node)) {
          ir::Attrs attrs = node.attrs;
          attrs.erase("values");
          attrs["value"] = *splat;
          return rw.emit(OpKind::kConstant, {}, std::move(attrs));
        }
      }
      return ir::kNoValue;
    case OpKind::kMul:
      if (is_one(f, ops[1]) && rw.type(ops[0]) == result) return ops[0];
      if (is_one(f, ops[0]) && rw.type(ops[1]) == result) return ops[1];
      break;
    case OpKind::kDiv:
      if (is_one(f, ops[1]) && rw.type(ops[0]) == result) return ops[0];
      break;
    default: break;
  }
  ir::Node probe = node;
  probe.operands = ops;
  if (auto attrs = fold_to_constant(f, probe, result)) return rw.emit(OpKind::kConstant, {}, std::move(*attrs));
  return ir::kNoValue;
}

std::string cse_key(const ir::Node& node, const std::vector<ValueId>& ops) {
  std::string key(op_name(node.op));
  for (ValueId op : ops) key += " %" + std::to_string(op);
  for (const auto& [name, value] : node.attrs) key += " " + name + "=" + ir::attr_to_string(value);
  return key;
}

}  // namespace

Expected<int> simplify(ir::Module& module) {
  int fired = 0;
  for (ir::Function& function : module.functions) {
    Rewriter rw(module, function);
    std::unordered_map<std::string, ValueId> seen;
    int fired_here = 0;
    for (const ir::Node& node : function.nodes) {
      rw.set_loc(node.loc);
      std::vector<ValueId> ops;
      for (ValueId operand : node.operands) ops.push_back(rw.map(operand));
      const bool returned = rw.old_uses().is_result[static_cast<size_t>(node.result)];
      ValueId replacement = fold(rw, node, ops, function.type(node.result), returned);
      const bool pure = !ir::has_side_effect(node.op) && node.op != OpKind::kWeight;
      if (replacement == ir::kNoValue && pure) {
        auto it = seen.find(cse_key(node, ops));
        if (it != seen.end()) replacement = it->second;
      }
      if (replacement != ir::kNoValue) {
        ++fired_here;
      } else {
        replacement = rw.emit(node.op, ops, node.attrs);
        if (pure) seen.emplace(cse_key(node, ops), replacement);
      }
      if (!rw.status().is_ok()) return rw.status().with_context("simplify in function @" + function.name);
      rw.set_map(node.result, replacement);
    }
    for (ValueId result : function.results) {
      const ir::Node* p = rw.producer(rw.map(result));
      if (!p || p->op != OpKind::kLinear) continue;
      rw.set_map(result, rw.emit(OpKind::kCast, {rw.map(result)}, {{"dtype", std::string(ir::dtype_name(function.type(result).dtype))}}));
      ++fired_here;
    }
    ir::Function cleaned = clean_function(rw.finish());
    // Nodes that were dead before the walk count as rewrites too: removing them changes the function.
    if (fired_here == 0 && cleaned.nodes.size() == function.nodes.size()) continue;
    fired += fired_here + static_cast<int>(function.nodes.size() > cleaned.nodes.size() && fired_here == 0
                                               ? function.nodes.size() - cleaned.nodes.size()
                                               : 0);
    function = std::move(cleaned);
  }
  return fired;
}

}  // namespace agentcompile::analysis::recognize
