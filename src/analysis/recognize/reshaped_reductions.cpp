// Pass: reshape_pointwise_inputs (a lowering, after split_long_reductions).
//
// A reduction over every element of a computed tensor reads it through a reshape: torch.mean((p - t) ** 2)
// (KernelBench's MSELoss, Huber, Hinge and Frobenius norms) flattens the squares, and
// split_long_reductions views the flat axis as [a, b]; an instance norm's statistics read its rows as
// [N * C, H * W]. The reshape stands between the pointwise chain and the reduction, so they form two
// regions: the chain writes the whole tensor (4 GB for MSELoss's 2^30 squares in f32) and the reduction
// reads it back. A row-major reshape commutes with elementwise ops, so the rule moves it onto the chain's
// inputs:
//   reduce(reshape(f(x, y, m)), ...)  ->  reduce(f(reshape(x), reshape(y), reshape(m)), ...)
// and the chain and the reduction share one iteration space, one region. The chain is followed up from
// the reshape through pointwise ops (and through reshapes only it reads) whose result is not returned,
// read only by the chain, or, for an op with one operand of its shape (a cast to f32 of a 16-bit input, or
// x - mean, read by the variance and the normalization alike), by others too: the op is then computed
// again inside the reduction, which reads its input instead of its result. Operands of the op's shape are followed; a scalar stays as it is;
// a broadcast operand (a norm's per-row mean, [1, C, 1, 1]) is reshaped too where the reshape merges
// adjacent axes and each merged run is whole or broadcast in it. Anything else is a leaf, reshaped
// itself. Applies to a reshape whose result reaches reductions only (directly or through pointwise ops of
// its shape) and whose operand a pointwise op produces.
#include <optional>

#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

bool is_pointwise(OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kPointwise; }

bool all_static(const ir::Shape& shape) {
  for (const ir::Dim& d : shape)
    if (!d.is_static()) return false;
  return true;
}

// The shape a broadcast operand (of a chain op whose result has shape `from`) takes when the chain is
// computed on `to`, where `to` merges adjacent axes of `from` (unit axes anywhere): each merged run is
// whole in the operand (the run's size) or broadcast (1). Nullopt for any other reshape or operand.
std::optional<ir::Shape> broadcast_on(ir::Shape operand, const ir::Shape& from, const ir::Shape& to) {
  if (!all_static(operand) || !all_static(from) || !all_static(to) || operand.size() > from.size()) return std::nullopt;
  operand.insert(operand.begin(), from.size() - operand.size(), ir::Dim::of(1));  // numpy's left padding
  std::vector<size_t> run(from.size());
  size_t j = 0;
  int64_t size = 1;
  for (size_t i = 0; i < from.size(); ++i) {
    while (j < to.size() && size == 1 && to[j].value == 1 && from[i].value != 1) ++j;  // a unit axis of `to`
    if (j >= to.size()) {
      if (from[i].value != 1) return std::nullopt;
      run[i] = to.size() - 1;
      continue;
    }
    size *= from[i].value;
    run[i] = j;
    if (size == to[j].value) {
      ++j;
      size = 1;
    } else if (size > to[j].value || to[j].value % size != 0) {
      return std::nullopt;  // `to` splits an axis of `from`
    }
  }
  while (j < to.size() && to[j].value == 1) ++j;
  if (j != to.size() || to.empty()) return std::nullopt;
  std::vector<int> whole(to.size(), 0), broadcast(to.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i].value == 1) continue;
    if (operand[i].value == from[i].value) whole[run[i]] = 1;
    else if (operand[i].value == 1) broadcast[run[i]] = 1;
    else return std::nullopt;
  }
  ir::Shape out;
  for (size_t k = 0; k < to.size(); ++k) {
    if (whole[k] && broadcast[k]) return std::nullopt;
    out.push_back(whole[k] ? to[k] : ir::Dim::of(1));
  }
  return out;
}

// Whether the old value's producer is a pointwise op the chain may pass through on `shape` (see above).
bool passes_through(const Rewriter& rw, ValueId value, const ir::Shape& shape) {
  const ir::Function& old = rw.old();
  const int producer = old.value(value).producer;
  if (producer < 0) return false;
  const ir::Node& node = old.nodes[static_cast<size_t>(producer)];
  if (!is_pointwise(node.op)) return false;
  const UseDef& uses = rw.old_uses();
  if (uses.is_result[static_cast<size_t>(value)]) return false;
  const auto& readers = uses.users[static_cast<size_t>(value)];
  bool one_reader = true;
  for (int reader : readers) one_reader &= reader == readers.front();
  const ir::Shape& own = old.type(value).shape;
  int whole = 0;  // operands of the op's own shape: what recomputing it reads again
  for (ValueId operand : node.operands) {
    const ir::Shape& s = old.type(operand).shape;
    if (s.empty()) continue;
    if (s == own) ++whole;
    else if (!broadcast_on(s, own, shape)) return false;
  }
  return one_reader || whole == 1;
}

// The value under reshapes that only this chain reads (a row-major reshape of a reshape is the last one's).
ValueId through_reshapes(const Rewriter& rw, ValueId value) {
  const ir::Function& old = rw.old();
  while (const ir::Node* reshape = single_use(rw.old_uses(), value) ? producer_of(old, value, OpKind::kReshape) : nullptr)
    value = reshape->operands[0];
  return value;
}

// The old value `value` computed on `shape` (as many elements): the chain rebuilt on reshaped leaves.
ValueId rebuild(Rewriter& rw, ValueId value, const ir::Shape& shape) {
  const ir::Function& old = rw.old();
  const ValueId under = through_reshapes(rw, value);
  if (!passes_through(rw, under, shape)) return rw.reshape(rw.map(under), shape);
  const ir::Node& node = old.nodes[static_cast<size_t>(old.value(under).producer)];
  const ir::Shape& own = old.type(under).shape;
  std::vector<ValueId> operands;
  for (ValueId operand : node.operands) {
    const ir::Shape& s = old.type(operand).shape;
    if (s.empty()) operands.push_back(rw.map(operand));
    else if (s == own) operands.push_back(rebuild(rw, operand, shape));
    else operands.push_back(rw.reshape(rw.map(operand), *broadcast_on(s, own, shape)));
  }
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
  const ir::Shape& shape = old.type(reshape.result).shape;
  if (!all_static(shape)) return ir::kNoValue;  // a dynamic reshape's target is not every leaf's
  const ValueId input = through_reshapes(rw, reshape.operands[0]);
  if (!passes_through(rw, input, shape)) return ir::kNoValue;
  return rebuild(rw, input, shape);
}

}  // namespace

Expected<int> reshape_pointwise_inputs(ir::Module& module) { return rewrite_nodes(module, "reshape_pointwise_inputs", rewrite); }

}  // namespace agentcompile::analysis::recognize
