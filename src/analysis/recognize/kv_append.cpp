// Pass: kv_append (rule 7).
//
// The capture writes a KV-cache update as torch's index_copy_ into the state at the rows of this
// call's positions:
//   index_copy(src[T, KV, D], idx) {state, axis = 0},  idx = pos + arange(T)   -> kv_append(src, pos) {state}
// idx may reach the index_copy through reshapes and i32 casts (torch's int64 positions narrowed), and
// either operand order of the add; a bare arange(T) means position 0 (a constant pos). Refuses: any
// other axis, indices that are not one contiguous run starting at a scalar (a scatter of arbitrary
// rows is a real index_copy and stays one).
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op != OpKind::kIndexCopy || f.type(node.operands[0]).shape.size() != 3 || normalize_axis(node.int_attr("axis"), 3) != 0)
    return ir::kNoValue;
  auto positions = match_positions(f, node.operands[1]);
  if (!positions || positions->length != f.type(node.operands[0]).shape[0]) return ir::kNoValue;
  const ValueId pos = positions->pos == ir::kNoValue ? rw.scalar(ir::DType::kI32, 0) : rw.map(positions->pos);
  return rw.emit(OpKind::kKvAppend, {rw.map(node.operands[0]), pos}, {{"state", node.string_attr("state")}});
}

}  // namespace

Expected<int> raise_kv_append(ir::Module& module) { return rewrite_nodes(module, "kv_append", rewrite); }

}  // namespace agentcompile::analysis::recognize
