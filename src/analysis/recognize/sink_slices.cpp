// Pass: sink slices (rule 11).
//
// HF's causal LMs normalize every position and slice the last one afterwards (logits_to_keep=1):
// slice(rmsnorm(h), T-1). The builders slice first and normalize one row, so the norm is a one-token
// op (and the decode prologue rules apply). A slice moves toward its producer through ops that treat
// the sliced axis as rows:
//   slice(rmsnorm(x, w))       -> rmsnorm(slice(x), w)      the slice's axis is not the last (the norm's)
//   slice(layer_norm(x, ...))  -> layer_norm(slice(x), ...) likewise
//   slice(softmax(x))          -> softmax(slice(x))         the slice's axis is not the softmax's
//   slice(unary(x)), slice(cast(x)) -> unary(slice(x))
//   slice(binary(x, c))        -> binary(slice(x), c)       c weight-only and of size 1 (or absent) on
//                                                           the sliced axis (Gemma's scale by a constant)
// when the sliced value has no other reader (otherwise every row is needed anyway). One step per node
// and walk; the driver's rounds repeat it until the slice stops. It stops at anything that mixes rows
// or reads two activations (the residual add the builders slice).
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpClass;
using ir::OpKind;
using ir::ValueId;

namespace {

// Whether `producer_node` may take the slice along `axis` of its result (rank `rank`), and which of
// its operands get sliced.
std::optional<std::vector<bool>> sliced_operands(const Rewriter& rw, const ir::Node& p, int64_t axis, size_t rank) {
  const ir::Function& f = rw.old();
  const OpClass op_class = ir::op_info(p.op).op_class;
  std::vector<bool> sliced(p.operands.size(), false);
  if (p.op == OpKind::kRmsNorm || p.op == OpKind::kLayerNorm) {
    if (axis == static_cast<int64_t>(rank) - 1) return std::nullopt;
    sliced[0] = true;
    return sliced;
  }
  if (op_class == OpClass::kSoftmax) {
    if (normalize_axis(p.int_attr("axis", -1), rank) == axis) return std::nullopt;
    sliced[0] = true;
    return sliced;
  }
  if (op_class != OpClass::kPointwise) return std::nullopt;
  if (p.operands.size() == 1) {
    sliced[0] = true;
    return sliced;
  }
  // Exactly one operand varies along the axis: the activation; the others are weight-only and flat there.
  int activations = 0;
  for (size_t i = 0; i < p.operands.size(); ++i) {
    const ir::Shape& shape = f.type(p.operands[i]).shape;
    const auto at = static_cast<int64_t>(shape.size()) - static_cast<int64_t>(rank) + axis;
    const bool flat = at < 0 || is_unit(shape[static_cast<size_t>(at)]);
    if (flat && rw.old_weight_only()[static_cast<size_t>(p.operands[i])]) continue;
    if (shape.size() != rank) return std::nullopt;
    sliced[i] = true;
    ++activations;
  }
  if (activations != 1) return std::nullopt;
  return sliced;
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op != OpKind::kSlice) return ir::kNoValue;
  const ValueId y = node.operands[0];
  const ir::Node* p = producer(f, y);
  if (!p || !single_use(rw.old_uses(), y)) return ir::kNoValue;
  const size_t rank = f.type(y).shape.size();
  const int64_t axis = normalize_axis(node.int_attr("axis"), rank);
  auto sliced = sliced_operands(rw, *p, axis, rank);
  if (!sliced) return ir::kNoValue;
  std::vector<ValueId> operands;
  for (size_t i = 0; i < p->operands.size(); ++i) {
    const ValueId operand = rw.map(p->operands[i]);
    operands.push_back((*sliced)[i] ? rw.emit(OpKind::kSlice, {operand}, node.attrs) : operand);
  }
  return rw.emit(p->op, operands, p->attrs);
}

}  // namespace

Expected<int> sink_slices(ir::Module& module) { return rewrite_nodes(module, "sink_slices", rewrite); }

}  // namespace agentcompile::analysis::recognize
