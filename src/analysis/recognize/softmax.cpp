// Pass: softmax (rule 4).
//
// torch's decompositions of softmax and log_softmax over one axis a (keepdim reductions):
//   softmax:      M = reduce_max(x, a); E = exp(sub(x, M)); div(E, reduce_sum(E, a))         -> softmax(x) {axis = a}
//                 (also without the max: E = exp(x), the unstable textbook form; the raised op is
//                 the same function, computed stably)
//   log_softmax:  S = sub(x, M); sub(S, log(reduce_sum(exp(S), a)))                           -> log_softmax(x) {axis = a}
// The exponentials and shifted values may have no readers outside the pattern (E is read by the sum
// and the division, S by the exp and the final sub). Refuses reductions over different axes, reductions
// without keepdim, and a max of anything but x.
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

// A keepdim reduction of op `op` over `value`: its axis (normalized), else -1.
int64_t keepdim_axis(const ir::Function& f, ValueId reduced, OpKind op, ValueId value) {
  const ir::Node* node = producer_of(f, reduced, op);
  if (!node || node->operands[0] != value || node->int_attr("keepdim") != 1) return -1;
  return normalize_axis(node->int_attr("axis", -1), f.type(value).shape.size());
}

// sub(x, reduce_max(x)) defining `shifted`: x and the axis.
std::optional<std::pair<ValueId, int64_t>> max_shifted(const ir::Function& f, ValueId shifted) {
  const ir::Node* sub = producer_of(f, shifted, OpKind::kSub);
  if (!sub) return std::nullopt;
  const ValueId x = sub->operands[0];
  const int64_t axis = keepdim_axis(f, sub->operands[1], OpKind::kReduceMax, x);
  if (axis < 0) return std::nullopt;
  return std::make_pair(x, axis);
}

ValueId raise_softmax_at(Rewriter& rw, const ir::Node& div) {
  const ir::Function& f = rw.old();
  const UseDef& uses = rw.old_uses();
  const ValueId e = div.operands[0];
  const ir::Node* exp = producer_of(f, e, OpKind::kExp);
  if (!exp || use_count(uses, e) != 2) return ir::kNoValue;
  const int64_t axis = keepdim_axis(f, div.operands[1], OpKind::kReduceSum, e);
  if (axis < 0 || !single_use(uses, div.operands[1])) return ir::kNoValue;
  ValueId x = exp->operands[0];
  if (auto shifted = max_shifted(f, x)) {
    if (shifted->second != axis || !single_use(uses, x)) return ir::kNoValue;
    x = shifted->first;
  }
  if (!ir::is_float(f.type(x).dtype)) return ir::kNoValue;
  return rw.emit(OpKind::kSoftmax, {rw.map(x)}, {{"axis", axis}});
}

ValueId raise_log_softmax_at(Rewriter& rw, const ir::Node& sub) {
  const ir::Function& f = rw.old();
  const UseDef& uses = rw.old_uses();
  const ValueId s = sub.operands[0];
  auto shifted = max_shifted(f, s);
  const ir::Node* log = producer_of(f, sub.operands[1], OpKind::kLog);
  if (!shifted || !log || use_count(uses, s) != 2 || !single_use(uses, sub.operands[1])) return ir::kNoValue;
  const ValueId sum = log->operands[0];
  const ir::Node* sum_node = producer_of(f, sum, OpKind::kReduceSum);
  if (!sum_node || !single_use(uses, sum)) return ir::kNoValue;
  const ValueId e = sum_node->operands[0];
  const ir::Node* exp = producer_of(f, e, OpKind::kExp);
  if (!exp || exp->operands[0] != s || !single_use(uses, e)) return ir::kNoValue;
  if (keepdim_axis(f, sum, OpKind::kReduceSum, e) != shifted->second) return ir::kNoValue;
  return rw.emit(OpKind::kLogSoftmax, {rw.map(shifted->first)}, {{"axis", shifted->second}});
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Node& node = rw.old().nodes[static_cast<size_t>(index)];
  if (node.op == OpKind::kDiv) return raise_softmax_at(rw, node);
  if (node.op == OpKind::kSub) return raise_log_softmax_at(rw, node);
  return ir::kNoValue;
}

}  // namespace

Expected<int> raise_softmax(ir::Module& module) { return rewrite_nodes(module, "softmax", rewrite); }

}  // namespace agentcompile::analysis::recognize
