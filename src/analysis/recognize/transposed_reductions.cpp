// Pass: reduce_without_transposes (a lowering, after split_long_reductions, before reshape_pointwise_inputs).
//
// Batch statistics (BatchNorm in training mode: KernelBench L1 33, L2 GEMM + BatchNorm) reduce every axis
// but the channels. The captured form moves the channel axis to the front and reads the rest as one row:
//   reduce(reshape(transpose(v, [k, 0, .., k-1, k+1, ..]), [S, R]), axis 1)        (S = v's axis k)
// and the transpose copies the whole tensor (twice per BatchNorm: x and (x - mean)^2) before each
// reduction. Reducing the axes after k first and then the ones before k gives the same result without
// moving data:
//   reduce(reduce(reshape(v, [P, S, Q]), axis 2), axis 0)       (P, Q: the products before and after k)
// where the first reduction is a row reduction over contiguous memory and the second one over P rows of S
// columns. Sums, maxima, minima and products regroup exactly up to float rounding; a mean is the mean of
// the equal-sized parts' means. A leading reduction is dropped when its axes are empty (Q = 1); keepdim
// gives the result its [S, 1]. The transpose and the reshape must be read only by this chain, and every
// shape static. argmax/argmin are left alone (their index is into the transposed row).
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::Dim;
using ir::OpKind;
using ir::ValueId;

namespace {

// The old value's producer when it has op `op` and the value is read once (not returned).
const ir::Node* only_producer(const Rewriter& rw, ValueId value, OpKind op) {
  return single_use(rw.old_uses(), value) ? producer_of(rw.old(), value, op) : nullptr;
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& old = rw.old();
  const ir::Node& reduce = old.nodes[static_cast<size_t>(index)];
  if (!regroups(reduce.op)) return ir::kNoValue;
  const ValueId rows = reduce.operands[0];
  const ir::Shape& row_shape = old.type(rows).shape;
  if (row_shape.size() != 2 || normalize_axis(reduce.int_attr("axis", -1), 2) != 1) return ir::kNoValue;
  const ir::Node* reshape = only_producer(rw, rows, OpKind::kReshape);
  if (!reshape) return ir::kNoValue;
  const ir::Node* transpose = only_producer(rw, reshape->operands[0], OpKind::kTranspose);
  if (!transpose) return ir::kNoValue;
  const ValueId v = transpose->operands[0];
  const ir::Shape& shape = old.type(v).shape;
  const std::vector<int64_t> perm = perm_of(*transpose);
  if (shape.size() < 2 || perm.size() != shape.size()) return ir::kNoValue;
  for (const Dim& d : shape)
    if (!d.is_static()) return ir::kNoValue;
  // perm = [k, 0, .., k-1, k+1, ..]: axis k to the front, the others in order.
  const int64_t k = perm[0];
  for (size_t i = 1, next = 0; i < perm.size(); ++i, ++next) {
    if (static_cast<int64_t>(next) == k) ++next;
    if (perm[i] != static_cast<int64_t>(next)) return ir::kNoValue;
  }
  int64_t before = 1, after = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (i < k) before *= shape[static_cast<size_t>(i)].value;
    else if (i > k) after *= shape[static_cast<size_t>(i)].value;
  const int64_t channels = shape[static_cast<size_t>(k)].value;
  if (!row_shape[0].is_static() || row_shape[0].value != channels || before == 1) return ir::kNoValue;  // before == 1: no data moves
  ValueId x = rw.reshape(rw.map(v), {Dim::of(before), Dim::of(channels), Dim::of(after)});
  if (after > 1) x = rw.emit(reduce.op, {x}, {{"axis", int64_t{2}}, {"keepdim", int64_t{0}}});  // [P, S]
  else x = rw.reshape(x, {Dim::of(before), Dim::of(channels)});
  const ValueId result = rw.emit(reduce.op, {x}, {{"axis", int64_t{0}}, {"keepdim", int64_t{0}}});  // [S]
  return rw.reshape(result, old.type(reduce.result).shape);  // [S] or, with keepdim, [S, 1]
}

}  // namespace

Expected<int> reduce_without_transposes(ir::Module& module) { return rewrite_nodes(module, "reduce_without_transposes", rewrite); }

}  // namespace agentcompile::analysis::recognize
