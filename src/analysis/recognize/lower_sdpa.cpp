// Pass: lower_sdpa (rule 8, the part that is not over the cache).
//
// An sdpa that raise_cache_attention did not take (a plain nn.Module calling
// F.scaled_dot_product_attention, KernelBench's problem 97: q, k, v [32, 32, 512, 1024], no mask) has
// no kernel family of its own; it becomes the primitives the generic families compile:
//   k, v  = repeat over heads when gqa and KV < NH: reshape [.., KV, 1, S2, D] -> broadcast
//           [.., KV, NH/KV, S2, D] -> reshape [.., NH, S2, D] (head h reads kv head h / (NH/KV))
//   s     = mul(matmul(q, transpose(k, swap last two)), scale)           [.., NH, S, S2]
//   mask  : bool -> where(mask, s, -inf); float -> add(s, mask)
//   causal: where(ge(arange(S)[:, None], arange(S2)[None, :]), s, -inf)  (query i sees keys 0..i)
//   out   = matmul(softmax(s, -1), v)
// in q's dtype, as torch's math backend does. A row with every key masked gives NaN, as torch does.
// Runs after the fixed point, so an sdpa over the cache is never lowered; the lowered form has no
// cache reads, so raise_cache_attention never raises it back.
#include <cmath>

#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::Dim;
using ir::OpKind;
using ir::ValueId;

namespace {

// k or v repeated from KV to NH heads (axis r-3), kv-major.
ValueId repeat_heads(Rewriter& rw, ValueId x, int64_t heads) {
  ir::Shape shape = rw.type(x).shape;
  const size_t r = shape.size();
  const int64_t kv = shape[r - 3].value;
  if (kv == heads) return x;
  ir::Shape split = shape;
  split.insert(split.begin() + static_cast<std::ptrdiff_t>(r - 2), Dim::of(1));  // [.., KV, 1, S2, D]
  ir::Shape stretched = split;
  stretched[r - 2] = Dim::of(heads / kv);                                          // [.., KV, n, S2, D]
  shape[r - 3] = Dim::of(heads);                                                    // [.., NH, S2, D]
  const ValueId expanded = rw.emit(OpKind::kBroadcast, {rw.reshape(x, split)}, {{"shape", stretched}});
  return rw.reshape(expanded, shape);
}

ValueId ramp(Rewriter& rw, const Dim& length) {
  return rw.emit(OpKind::kArange, {}, {{"dtype", std::string("i32")}, {"start", int64_t{0}}, {"step", int64_t{1}}, {"length", ir::Shape{length}}});
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op != OpKind::kSdpa) return ir::kNoValue;
  const ValueId q = rw.map(node.operands[0]);
  ValueId k = rw.map(node.operands[1]);
  ValueId v = rw.map(node.operands[2]);
  const ir::TensorType qt = rw.type(q);
  const size_t r = qt.shape.size();
  if (node.int_attr("gqa", 0) != 0) {
    const int64_t heads = qt.shape[r - 3].value;
    k = repeat_heads(rw, k, heads);
    v = repeat_heads(rw, v, heads);
  }
  std::vector<int64_t> swap = identity_perm(r);
  std::swap(swap[r - 1], swap[r - 2]);
  ValueId scores = rw.emit(OpKind::kMatmul, {q, rw.transpose(k, swap)});  // [.., NH, S, S2]
  scores = rw.emit(OpKind::kMul, {scores, rw.scalar(qt.dtype, node.float_attr("scale"))});
  const ValueId minus_infinity = rw.scalar(qt.dtype, -INFINITY);
  if (node.operands.size() == 4) {
    const ValueId mask = rw.map(node.operands[3]);
    if (rw.type(mask).dtype == ir::DType::kBool)
      scores = rw.emit(OpKind::kWhere, {mask, scores, minus_infinity});
    else
      scores = rw.emit(OpKind::kAdd, {scores, mask});
  }
  if (node.int_attr("causal", 0) != 0) {
    const Dim queries = qt.shape[r - 2];
    const Dim keys = rw.type(k).shape[r - 2];
    const ValueId rows = rw.reshape(ramp(rw, queries), {queries, Dim::of(1)});
    const ValueId cols = rw.reshape(ramp(rw, keys), {Dim::of(1), keys});
    scores = rw.emit(OpKind::kWhere, {rw.emit(OpKind::kGe, {rows, cols}), scores, minus_infinity});
  }
  const ValueId probabilities = rw.emit(OpKind::kSoftmax, {scores}, {{"axis", int64_t{-1}}});
  return rw.emit(OpKind::kMatmul, {probabilities, v});
}

}  // namespace

Expected<int> lower_sdpa(ir::Module& module) { return rewrite_nodes(module, "lower_sdpa", rewrite); }

}  // namespace agentcompile::analysis::recognize
