// Pass: reshape_pointwise_inputs (a lowering, after split_long_reductions).
//
// A reduction over every element of a computed tensor reads it through a reshape: torch.mean((p - t) ** 2)
// (KernelBench's MSELoss, Huber, Hinge and Frobenius norms) flattens the squares, and
// split_long_reductions views the flat axis as [a, b]. The reshape stands between the pointwise chain and
// the reduction, so they form two regions: the chain writes the whole tensor (4 GB for MSELoss's 2^30
// squares in f32) and the reduction reads it back. A row-major reshape commutes with elementwise ops of
// one shape, so the rule moves it onto the chain's inputs:
//   reduce(reshape(f(x, y)), ...)  ->  reduce(f(reshape(x), reshape(y)), ...)
// and the chain and the reduction share one iteration space, one region. The chain is followed up from
// the reshape through pointwise ops whose result only the chain reads and whose operands all have the
// result's shape or are scalars (a scalar operand stays as it is); any other value (a broadcast operand,
// a value read elsewhere, a function result, a non-pointwise producer) is a leaf and is reshaped itself.
// Applies to a reshape whose result reaches reductions only (directly or through pointwise ops of its
// shape) and whose operand a pointwise op produces, looking through reshapes read only by it.
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

bool is_pointwise(OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kPointwise; }

// Whether the old value's producer is a pointwise op the chain may pass through: read only by the chain
// (one user), not returned, its operands of its own shape or scalars.
bool passes_through(const Rewriter& rw, ValueId value) {
  const ir::Function& old = rw.old();
  const int producer = old.value(value).producer;
  if (producer < 0) return false;
  const ir::Node& node = old.nodes[static_cast<size_t>(producer)];
  if (!is_pointwise(node.op)) return false;
  const UseDef& uses = rw.old_uses();
  if (uses.is_result[static_cast<size_t>(value)] || uses.users[static_cast<size_t>(value)].size() != 1) return false;
  const ir::Shape& shape = old.type(value).shape;
  for (ValueId operand : node.operands)
    if (old.type(operand).shape != shape && !old.type(operand).shape.empty()) return false;
  return true;
}

// The value under reshapes that only this chain reads (a row-major reshape of a reshape is the last one's).
ValueId through_reshapes(const Rewriter& rw, ValueId value) {
  const ir::Function& old = rw.old();
  const UseDef& uses = rw.old_uses();
  for (int producer = old.value(value).producer;
       producer >= 0 && old.nodes[static_cast<size_t>(producer)].op == OpKind::kReshape && uses.users[static_cast<size_t>(value)].size() == 1 &&
       !uses.is_result[static_cast<size_t>(value)];
       producer = old.value(value).producer)
    value = old.nodes[static_cast<size_t>(producer)].operands[0];
  return value;
}

// The old value `value` computed on `shape` (as many elements): the chain rebuilt on reshaped leaves.
ValueId rebuild(Rewriter& rw, ValueId value, const ir::Shape& shape) {
  const ir::Function& old = rw.old();
  const ValueId under = through_reshapes(rw, value);
  if (!passes_through(rw, under)) return rw.reshape(rw.map(under), shape);
  const ir::Node& node = old.nodes[static_cast<size_t>(old.value(under).producer)];
  std::vector<ValueId> operands;
  for (ValueId operand : node.operands)
    operands.push_back(old.type(operand).shape.empty() ? rw.map(operand) : rebuild(rw, operand, shape));
  return rw.emit(node.op, std::move(operands), node.attrs);
}

// Whether every reader of the old value is a reduction, or a pointwise op of the value's shape (its other
// operands of that shape or scalars) whose result feeds reductions the same way: the reshape's result
// reaches reductions only (a cast to f32 may come between, as split_long_reductions puts it).
bool feeds_reductions(const Rewriter& rw, ValueId value) {
  const ir::Function& old = rw.old();
  const UseDef& uses = rw.old_uses();
  const auto& readers = uses.users[static_cast<size_t>(value)];
  if (readers.empty() || uses.is_result[static_cast<size_t>(value)]) return false;
  for (int reader : readers) {
    const ir::Node& node = old.nodes[static_cast<size_t>(reader)];
    if (ir::op_info(node.op).op_class == ir::OpClass::kReduction) continue;
    if (!is_pointwise(node.op) || old.type(node.result).shape != old.type(value).shape) return false;
    for (ValueId operand : node.operands)
      if (old.type(operand).shape != old.type(value).shape && !old.type(operand).shape.empty()) return false;
    if (!feeds_reductions(rw, node.result)) return false;
  }
  return true;
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& old = rw.old();
  const ir::Node& reshape = old.nodes[static_cast<size_t>(index)];
  if (reshape.op != OpKind::kReshape || !feeds_reductions(rw, reshape.result)) return ir::kNoValue;
  const ValueId input = through_reshapes(rw, reshape.operands[0]);
  if (!passes_through(rw, input)) return ir::kNoValue;
  const ir::Shape& shape = old.type(reshape.result).shape;
  for (const ir::Dim& d : shape)
    if (!d.is_static()) return ir::kNoValue;  // a dynamic reshape's target is not every leaf's
  return rebuild(rw, input, shape);
}

}  // namespace

Expected<int> reshape_pointwise_inputs(ir::Module& module) { return rewrite_nodes(module, "reshape_pointwise_inputs", rewrite); }

}  // namespace agentcompile::analysis::recognize
