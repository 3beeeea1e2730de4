// Pass: widen_divided_sums (a lowering, after split_long_reductions).
//
// A sum of 16-bit floats that is then divided (a mean over a count known only at run time:
// cross_entropy's nll_loss decomposes into sum(losses) / total_weight) rounds the sum to f16 or bf16
// before the division: 32768 losses of ~8 sum to ~2.7e5, past f16's 65504, and the mean becomes inf.
// torch's own kernels (nll_loss's acc_type) and Inductor sum in f32 and divide before they round. So
// does this rule:
//   div(reduce_sum(x16), d)  ->  cast(div(reduce_sum(cast(x16, f32)), cast(d, f32)), dtype)
// when the sum's only reader is the division's numerator. The division's result is rounded once to its
// own dtype. A sum that something else reads too, an f32 or integer sum, and a reduce_mean (which
// divides before it rounds already) keep their form.
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& old = rw.old();
  const ir::Node& div = old.nodes[static_cast<size_t>(index)];
  if (div.op != OpKind::kDiv) return ir::kNoValue;
  const ValueId sum_value = div.operands[0];
  const ir::Node* sum = producer_of(old, sum_value, OpKind::kReduceSum);
  if (!sum || !is_narrow_float(old.type(sum_value).dtype) || !single_use(rw.old_uses(), sum_value) || div.operands[1] == sum_value)
    return ir::kNoValue;
  const ValueId divisor = rw.map(div.operands[1]);
  if (!ir::is_float(rw.type(divisor).dtype)) return ir::kNoValue;
  // The divisor's cast first: placed after the sum, a cast of the same shape would join the sum's
  // region as an op that does not read it, a region no reduction family takes.
  const ValueId wide_divisor = rw.cast(divisor, ir::DType::kF32);
  const ValueId wide = rw.emit(OpKind::kReduceSum, {rw.cast(rw.map(sum->operands[0]), ir::DType::kF32)}, sum->attrs);
  const ValueId quotient = rw.emit(OpKind::kDiv, {wide, wide_divisor});
  return rw.cast(quotient, old.type(div.result).dtype);
}

}  // namespace

Expected<int> widen_divided_sums(ir::Module& module) { return rewrite_nodes(module, "widen_divided_sums", rewrite); }

}  // namespace agentcompile::analysis::recognize
