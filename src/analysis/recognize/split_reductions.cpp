// Pass: split_long_reductions (a lowering, after lower_sdpa).
//
// A reduction over a very long last axis (a full reduction of a flattened tensor: KernelBench's
// FrobeniusNorm sums 1.88 G squares, torch.linalg.vector_norm over every element) is one row of
// billions of columns: more columns than a kernel indexes with ints, and a single row that only a
// grid-wide split could spread over the GPU. It becomes two reductions over a view of that axis as
// [a, b]:
//   reduce(x[..., n], -1)  ->  reduce(reduce(reshape(x, [..., a, b]), -1), -1)      (n = a * b)
// b is the largest divisor of n not above kSplitColumns, so the first reduction is a[...] rows of b
// columns (many rows: the row families spread them over the GPU) and the second one row of a. A full
// reduction of a flattened tensor takes instead the largest product of the tensor's trailing dims in
// [kMinSplitColumns, kAlignedColumns] when there is one: the view is then the tensor's own rows (HingeLoss's
// [32768, 32768] stays [32768, 32768]), which reshape_pointwise_inputs can move onto a chain whose
// operands broadcast along those rows (targets[32768] against predictions[32768, 32768]), where a view
// that cuts a row in two could not.
// Sums, products, maxima and minima regroup exactly up to float rounding (ints exactly); a mean is
// the mean of the equal-sized parts' means. keepdim applies to the second reduction. The parts of a
// 16-bit float reduction are f32 (the input is cast before the view the first reduction reads, the
// result rounded once at the end). argmax/argmin
// are left alone (an index into the flattened axis). Refuses an axis of at most kLongAxis elements,
// a dynamic one, and one whose largest divisor in range is below kMinSplitColumns (a prime length):
// such a reduction keeps its form.
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::Dim;
using ir::OpKind;
using ir::ValueId;

namespace {

constexpr int64_t kLongAxis = int64_t{1} << 24;
constexpr int64_t kSplitColumns = int64_t{1} << 14;
constexpr int64_t kMinSplitColumns = int64_t{1} << 10;
constexpr int64_t kAlignedColumns = int64_t{1} << 18;

// For a full reduction of reshape(v) to one axis: the largest product of v's trailing dims in
// [kMinSplitColumns, kAlignedColumns], or 0 when there is none (or v's shape is not static).
int64_t aligned_columns(const Rewriter& rw, ValueId old_reduced) {
  const ir::Node* flatten = producer_of(rw.old(), old_reduced, OpKind::kReshape);
  if (!flatten || rw.old().type(old_reduced).shape.size() != 1) return 0;
  const ir::Shape& source = rw.old().type(flatten->operands[0]).shape;
  int64_t product = 1, best = 0;
  for (auto d = source.rbegin(); d != source.rend(); ++d) {
    if (!d->is_static()) return 0;
    product *= d->value;
    if (product > kAlignedColumns) break;
    if (product >= kMinSplitColumns) best = product;
  }
  return best;
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Node& node = rw.old().nodes[static_cast<size_t>(index)];
  if (!regroups(node.op)) return ir::kNoValue;
  const ValueId x = rw.map(node.operands[0]);
  const ir::Shape& shape = rw.type(x).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = node.int_attr("axis", -1);
  if (axis < 0) axis += rank;
  if (rank == 0 || axis != rank - 1 || !shape.back().is_static() || shape.back().value <= kLongAxis) return ir::kNoValue;
  const int64_t n = shape.back().value;
  int64_t b = aligned_columns(rw, node.operands[0]);
  if (b == 0) {
    b = kSplitColumns;
    while (b >= kMinSplitColumns && n % b != 0) --b;
  }
  if (b < kMinSplitColumns) return ir::kNoValue;
  ir::Shape split = shape;
  split.back() = Dim::of(n / b);
  split.push_back(Dim::of(b));  // [..., a, b]
  // 16-bit floats: the parts stay in f32 (a reduction accumulates in f32 and rounds once, as torch's
  // does), and only the result is rounded back.
  const ir::DType dtype = rw.type(x).dtype;
  const bool narrow = is_narrow_float(dtype);
  // (cast, then reshape: the reduction reads the reshape directly, which reshape_pointwise_inputs then moves
  // onto the inputs of the pointwise chain before it, cast included.)
  const ValueId source = narrow ? rw.reshape(rw.cast(x, ir::DType::kF32), split) : rw.reshape(x, split);
  const ValueId parts = rw.emit(node.op, {source}, {{"axis", int64_t{-1}}, {"keepdim", int64_t{0}}});  // [..., a]
  const ValueId result = rw.emit(node.op, {parts}, {{"axis", int64_t{-1}}, {"keepdim", node.int_attr("keepdim", 0)}});
  return narrow ? rw.cast(result, dtype) : result;
}

}  // namespace

Expected<int> split_long_reductions(ir::Module& module) { return rewrite_nodes(module, "split_long_reductions", rewrite); }

}  // namespace agentcompile::analysis::recognize
