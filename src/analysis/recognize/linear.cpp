// Pass: linear (rule 2).
//
// torch.export writes nn.Linear as a matmul with the transposed weight, the activation viewed to 2-D
// around it ([1, T, K] -> [T, K] -> mm -> [T, N] -> [1, T, N]), and a bias as addmm's add. Patterns:
//   matmul(A, transpose(W, [1, 0]))                      -> linear(A, W)
//   matmul(reshape(X), transpose(W, [1, 0]))             -> reshape(linear(X, W))   when the reshape only
//                                                           merges X's leading dims (last dim K kept)
//   add(<one of the above>, B) / add(B, <...>)           -> linear(X, W, B)         (then reshaped to the add's shape)
// where W is a weight node of rank 2 ([N, K], Hugging Face layout), B a weight-only value of type
// [N] with the activation's dtype, and the matmul (and the view between it and the add) has no other
// reader. The reshape left around the linear cancels against the view back to [..., N] in simplify.
// Refuses: a weight that is not transposed by exactly [1, 0] (x @ W with W stored [K, N] stays a
// matmul), a weight expression rather than a weight (cast, slice: the GEMM families read a parameter),
// batched matmuls of two activations, and biases of any other shape.
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

struct LinearMatch {
  ValueId x = ir::kNoValue;       // old id of the activation as the linear reads it
  ValueId weight = ir::kNoValue;  // old id of the weight node's result
  ValueId result = ir::kNoValue;  // old id of the matmul (or bias-free linear) result
};

// matmul(A, transpose(W)) or linear(X, W) without bias, defining `value`.
std::optional<LinearMatch> match_matmul(const ir::Function& f, ValueId value) {
  const ir::Node* node = producer(f, value);
  if (!node) return std::nullopt;
  if (node->op == OpKind::kLinear && node->operands.size() == 2)
    return LinearMatch{node->operands[0], node->operands[1], value};
  if (node->op != OpKind::kMatmul || f.type(value).shape.size() != 2) return std::nullopt;
  const ir::Node* transpose = producer_of(f, node->operands[1], OpKind::kTranspose);
  if (!transpose || perm_of(*transpose) != std::vector<int64_t>{1, 0}) return std::nullopt;
  const ValueId w = transpose->operands[0];
  if (!producer_of(f, w, OpKind::kWeight)) return std::nullopt;
  ValueId x = node->operands[0];
  if (const ir::Node* view = producer(f, x); view && (view->op == OpKind::kReshape || view->op == OpKind::kView)) {
    const ValueId source = view->operands[0];
    if (!f.type(source).shape.empty() && f.type(source).shape.back() == f.type(x).shape.back()) x = source;
  }
  return LinearMatch{x, w, value};
}

ValueId emit_linear(Rewriter& rw, const LinearMatch& m, ValueId bias, const ir::Shape& shape) {
  std::vector<ValueId> operands{rw.map(m.x), rw.map(m.weight)};
  if (bias != ir::kNoValue) operands.push_back(rw.map(bias));
  return rw.reshape(rw.emit(OpKind::kLinear, operands), shape);
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op == OpKind::kMatmul) {
    auto m = match_matmul(f, node.result);
    if (!m) return ir::kNoValue;
    return emit_linear(rw, *m, ir::kNoValue, f.type(node.result).shape);
  }
  if (node.op != OpKind::kAdd) return ir::kNoValue;
  for (int side = 0; side < 2; ++side) {
    ValueId product = node.operands[static_cast<size_t>(side)];
    const ValueId bias = node.operands[static_cast<size_t>(1 - side)];
    if (!single_use(rw.old_uses(), product)) continue;
    if (const ir::Node* view = producer(f, product); view && view->op == OpKind::kReshape) {
      product = view->operands[0];
      if (!single_use(rw.old_uses(), product)) continue;
    }
    auto m = match_matmul(f, product);
    if (!m) continue;
    const ir::TensorType& w = f.type(m->weight);
    const ir::TensorType& b = f.type(bias);
    if (b.shape.size() != 1 || b.shape[0] != w.shape[0] || b.dtype != f.type(m->x).dtype) continue;
    if (!rw.old_weight_only()[static_cast<size_t>(bias)]) continue;
    return emit_linear(rw, *m, bias, f.type(node.result).shape);
  }
  return ir::kNoValue;
}

}  // namespace

Expected<int> raise_linear(ir::Module& module) { return rewrite_nodes(module, "linear", rewrite); }

}  // namespace agentcompile::analysis::recognize
