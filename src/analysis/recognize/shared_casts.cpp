// Pass: recompute_widening_casts (the last lowering, after the final canonicalization, whose common-
// subexpression elimination would merge the copies again).
//
// Normalizations in 16 bits (instance, group and batch norm; captured losses) widen their input once,
// x32 = cast(x16, f32), and read x32 twice: the mean, and the (x32 - mean)^2 of the variance, which needs
// the mean first and so lands in another region. The shared x32 is then written to memory by the first
// region and read by the second: at KernelBench L1 34's size (1.88 G elements), 7.5 GB written and read
// where x16 itself is 3.8 GB. Every reader but the first gets a cast of its own instead:
//   r1 = reduce(cast(x16)), r2 = f(cast(x16), ..)      (one cast each)
// so each region reads the 16-bit input and widens it in registers. Only a widening cast from a 16-bit
// float with two readers or more of which one is a reduction is copied, and only for pointwise and
// reduction readers (the ops a fused region holds); the first reader keeps the original.
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

bool fusable_reader(OpKind op) {
  const ir::OpClass c = ir::op_info(op).op_class;
  return c == ir::OpClass::kPointwise || c == ir::OpClass::kReduction;
}

// The cast that defines old value `value` when a copy of it should replace it for reader `reader`.
const ir::Node* shared_widening_cast(const Rewriter& rw, ValueId value, int reader) {
  const ir::Function& old = rw.old();
  const ir::Node* cast = producer_of(old, value, OpKind::kCast);
  if (!cast || ir::dtype_size(old.type(value).dtype) != 4 || !ir::is_float(old.type(value).dtype) ||
      !is_narrow_float(old.type(cast->operands[0]).dtype))
    return nullptr;
  const std::vector<int>& users = rw.old_uses().users[static_cast<size_t>(value)];
  if (users.size() < 2 || users.front() == reader) return nullptr;
  bool reduced = false;
  for (int user : users) {
    const OpKind op = old.nodes[static_cast<size_t>(user)].op;
    if (!fusable_reader(op)) return nullptr;
    reduced = reduced || ir::op_info(op).op_class == ir::OpClass::kReduction;
  }
  return reduced ? cast : nullptr;
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Node& node = rw.old().nodes[static_cast<size_t>(index)];
  if (!fusable_reader(node.op)) return ir::kNoValue;
  std::vector<ValueId> operands;
  bool copied = false;
  for (ValueId operand : node.operands) {
    const ir::Node* cast = shared_widening_cast(rw, operand, index);
    if (!cast) {
      operands.push_back(rw.map(operand));
      continue;
    }
    operands.push_back(rw.emit(OpKind::kCast, {rw.map(cast->operands[0])}, cast->attrs));
    copied = true;
  }
  return copied ? rw.emit(node.op, std::move(operands), node.attrs) : ir::kNoValue;
}

}  // namespace

Expected<int> recompute_widening_casts(ir::Module& module) { return rewrite_nodes(module, "recompute_widening_casts", rewrite); }

}  // namespace agentcompile::analysis::recognize
