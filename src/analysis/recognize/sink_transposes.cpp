// Pass: sink transposes (rule 1, canonicalization).
//
// torch code often permutes to [B, H, S, D] before a row-wise op and permutes back after it (Gemma-3
// normalizes q and k after .transpose(1, 2); OLMo-2 upcasts the permuted q for its rotary). The
// builders apply those ops on [T, NH, D] with no permute at all. A transpose moves past the op that
// reads it, toward its consumers, where simplify cancels it against the inverse permute:
//   unary(transpose(x))               -> transpose(unary(x))           (casts and every unary pointwise op)
//   rmsnorm(transpose(x), w)          -> transpose(rmsnorm(x, w))      when perm keeps the last axis last
//   layer_norm(transpose(x), ...)     -> transpose(layer_norm(x, ...)) likewise
//   binary(transpose(x), c)           -> transpose(binary(x, c'))      c weight-only of rank <= 1 and,
//                                                                      unless a scalar, perm keeps the
//                                                                      last axis (c broadcasts over it)
// when the transpose has no other reader (otherwise it is needed as it is anyway). One step per node
// and walk; the driver's rounds repeat it.
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
  const bool binary = ir::is_binary_pointwise(node.op) && !ir::is_comparison(node.op);
  const bool row_wise = node.op == OpKind::kRmsNorm || node.op == OpKind::kLayerNorm;
  if (!binary && !row_wise && !ir::is_unary_pointwise(node.op)) return ir::kNoValue;
  for (size_t side = 0; side < (binary ? 2u : 1u); ++side) {
    const ValueId moved = node.operands[side];
    const ir::Node* transpose = producer_of(f, moved, OpKind::kTranspose);
    if (!transpose || !single_use(rw.old_uses(), moved)) continue;
    const auto perm = perm_of(*transpose);
    const bool keeps_last = perm.back() == static_cast<int64_t>(perm.size()) - 1;
    if (row_wise && !keeps_last) continue;
    if (binary) {
      const ValueId other = node.operands[1 - side];
      const size_t rank = f.type(other).shape.size();
      if (!rw.old_weight_only()[static_cast<size_t>(other)] || rank > 1 || (rank == 1 && !keeps_last)) continue;
    }
    std::vector<ValueId> operands;
    for (size_t i = 0; i < node.operands.size(); ++i)
      operands.push_back(rw.map(i == side ? transpose->operands[0] : node.operands[i]));
    return rw.transpose(rw.emit(node.op, operands, node.attrs), perm);
  }
  return ir::kNoValue;
}

}  // namespace

Expected<int> sink_transposes(ir::Module& module) { return rewrite_nodes(module, "sink_transposes", rewrite); }

}  // namespace agentcompile::analysis::recognize
