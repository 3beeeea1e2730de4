// Pass: attention over the KV cache (rule 8).
//
// The capture's attention reads the whole cache after this call's kv_appends and masks what each
// query may see (docs/capture.md):
//   sdpa(q, k, v, mask) {scale, gqa}
//     k, v   = layouts of kv_append results [L, KV, D] as [(1,) KV, L, D] (transpose [1, 0, 2] and an
//              unsqueeze), or torch's repeat_kv of them ([KV, 1] expanded to [KV, n], viewed as KV*n
//              heads: head h reads kv head h / n, which is attention's GQA rule; then gqa may be 0)
//     q      = [(1,) NH, T, D]
//     mask   = le(arange(L)[None, :], positions[:, None]) (or ge with the operands swapped), optionally
//              logical_and-ed with gt(arange(L)[None, :], positions[:, None] - W), positions =
//              pos + arange(T) with the very pos the kv_appends wrote at; unsqueezed/expanded to q's
//              scores [(1,) NH?, T, L]
//   -> attention(q'[T, NH, D], k_cache, v_cache, pos) {scale, window = W}, back to q's layout.
// The eager form over the cache is recognized the same way:
//   matmul([cast](softmax([cast](masked(mul(matmul(q, transpose(k)), s))))), v)
//   masked(x) = where(mask, x, -inf) or add(x, where(mask, 0, -inf)); mul by s or div by 1/s
// The scale is written as the builders write it: 1/sqrt(n) computed in double whenever the captured
// value is within 4 double ulps of it (HF's head_dim**-0.5 and 1/sqrt(head_dim) differ in the last bit).
// Refuses: any other mask (padding masks, masks from inputs), k/v not read from this function's cache
// writes, causal = 1 (queries from position 0, not pos), queries with a batch of more than one.
// An sdpa left over is lowered to primitives by lower_sdpa.cpp, after every other rule.
#include <cmath>

#include "analysis/recognize/layout_axes.h"
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

enum Axis : int { kRowsAxis = 1, kHeadsAxis = 2, kFeatureAxis = 3, kQueryAxis = 4, kKeyAxis = 5 };

double builder_scale(double scale) {
  if (!(scale > 0)) return scale;
  const double n = std::round(1.0 / (scale * scale));
  if (n < 1) return scale;
  const double canonical = 1.0 / std::sqrt(n);
  double bound = canonical;
  for (int i = 0; i < 4; ++i) bound = std::nextafter(bound, INFINITY);
  return std::abs(scale - canonical) <= bound - canonical ? canonical : scale;
}

// The kv_append result that `value` lays out as [(1,) heads, L, D]; kNoValue otherwise.
ValueId cache_of(const ir::Function& f, ValueId value) {
  std::vector<const ir::Node*> chain;
  const ValueId cache = strip_layout(f, value, chain);
  if (!producer_of(f, cache, OpKind::kKvAppend)) return ir::kNoValue;
  const AxisKinds kinds = replay_axes(f, chain, {kRowsAxis, kHeadsAxis, kFeatureAxis});
  const size_t r = kinds.size();
  // One kv head is a unit axis, which layout ops may move freely.
  const bool one_head = is_unit(f.type(cache).shape[1]);
  const bool heads = r >= 3 && (kinds[r - 3] == kHeadsAxis || (one_head && (kinds[r - 3] == kUnitAxis || kinds[r - 3] == kStretchedAxis)));
  if (!heads || kinds[r - 2] != kRowsAxis || kinds[r - 1] != kFeatureAxis) return ir::kNoValue;
  for (size_t i = 0; i + 3 < r; ++i)
    if (kinds[i] != kUnitAxis) return ir::kNoValue;
  return cache;
}

// The positions a value lays out along one axis of the mask: `axis_kind` must land on the single
// non-unit axis (or any axis when the length is 1).
struct MaskSide {
  ValueId root = ir::kNoValue;
  AxisKinds kinds;
};

MaskSide mask_side(const ir::Function& f, ValueId value, int axis_kind) {
  std::vector<const ir::Node*> chain;
  const ValueId root = strip_layout(f, value, chain);
  const ir::Shape& shape = f.type(root).shape;
  AxisKinds kinds(shape.size(), kUnitAxis);
  for (size_t i = 0; i < shape.size(); ++i)
    if (!is_unit(shape[i])) kinds[i] = axis_kind;
  return MaskSide{root, replay_axes(f, chain, kinds)};
}

struct CacheMask {
  Positions positions;
  int64_t window = 0;
};

// Key/query axes: right-aligned to the comparison's result [.., T, L].
bool on_axis(const AxisKinds& kinds, size_t rank, size_t want_axis, int kind) {
  if (kinds.empty() || kinds.size() > rank) return false;
  for (size_t j = 0; j < kinds.size(); ++j) {
    const size_t axis = rank - kinds.size() + j;
    if (kinds[j] == kind && axis != want_axis) return false;
    if (kinds[j] != kind && kinds[j] != kUnitAxis) return false;
  }
  return true;
}

// cmp(keys, queries - shift): the arange(L) side and the positions side of a comparison, with the
// keys on the last axis and the queries on the one before; `shift` receives W of `positions - W`.
std::optional<Positions> keys_versus_queries(const ir::Function& f, const ir::Node& cmp, bool keys_first, int64_t* shift) {
  const size_t rank = f.type(cmp.result).shape.size();
  if (rank < 1) return std::nullopt;
  const MaskSide keys = mask_side(f, cmp.operands[keys_first ? 0 : 1], kKeyAxis);
  ValueId queries_value = cmp.operands[keys_first ? 1 : 0];
  if (shift) {
    std::vector<const ir::Node*> chain;
    const ValueId inner = strip_layout(f, queries_value, chain);
    const ir::Node* sub = producer_of(f, inner, OpKind::kSub);
    const auto w = sub ? splat_constant(f, sub->operands[1]) : std::nullopt;
    if (!w || *w < 1 || *w != std::floor(*w) || !chain.empty()) return std::nullopt;
    *shift = static_cast<int64_t>(*w);
    queries_value = sub->operands[0];
  }
  const MaskSide queries = mask_side(f, queries_value, kQueryAxis);
  const ir::Node* arange = producer_of(f, strip_index_layout(f, keys.root), OpKind::kArange);
  auto positions = match_positions(f, queries.root);
  if (!arange || !positions || arange->float_attr("start", 0) != 0 || arange->float_attr("step", 1) != 1) return std::nullopt;
  // A single query's comparison may have lost its query axis (decode: [L] against [1]).
  const size_t query_axis = rank >= 2 ? rank - 2 : 0;
  if (rank < 2 && !is_unit(positions->length)) return std::nullopt;
  if (!on_axis(keys.kinds, rank, rank - 1, kKeyAxis) || !on_axis(queries.kinds, rank, query_axis, kQueryAxis)) return std::nullopt;
  return positions;
}

// The causal cache mask (and its window) behind the bool value `mask` of rank >= 2.
std::optional<CacheMask> match_cache_mask(const ir::Function& f, ValueId mask) {
  std::vector<const ir::Node*> chain;
  const ValueId root = strip_layout(f, mask, chain);
  const size_t rank = f.type(root).shape.size();
  AxisKinds kinds(rank, kUnitAxis);
  if (rank < 1) return std::nullopt;
  if (rank >= 2) kinds[rank - 2] = kQueryAxis;
  kinds[rank - 1] = kKeyAxis;
  // Keys on the last axis, queries on the one before (a single query's axis is a unit one and may be
  // anywhere among the leading units); every other axis a unit or an expand over heads.
  const AxisKinds outer = replay_axes(f, chain, kinds);
  const size_t r = outer.size();
  const bool one_query = rank < 2 || is_unit(f.type(root).shape[rank - 2]);
  if (r < 2 || outer[r - 1] != kKeyAxis || (outer[r - 2] != kQueryAxis && !(one_query && outer[r - 2] == kUnitAxis)))
    return std::nullopt;
  for (size_t i = 0; i + 2 < r; ++i)
    if (outer[i] != kUnitAxis && outer[i] != kStretchedAxis) return std::nullopt;
  ValueId causal = root;
  CacheMask result;
  if (const ir::Node* both = producer_of(f, root, OpKind::kLogicalAnd)) {
    for (int side = 0; side < 2 && result.window == 0; ++side) {
      const ir::Node* window = producer(f, both->operands[static_cast<size_t>(1 - side)]);
      if (!window) continue;
      int64_t w = 0;
      std::optional<Positions> p;
      if (window->op == OpKind::kGt) p = keys_versus_queries(f, *window, true, &w);
      if (window->op == OpKind::kLt) p = keys_versus_queries(f, *window, false, &w);
      if (!p) continue;
      result.window = w;
      result.positions = *p;
      causal = both->operands[static_cast<size_t>(side)];
    }
    if (result.window == 0) return std::nullopt;
  }
  const ir::Node* cmp = producer(f, causal);
  std::optional<Positions> p;
  if (cmp && cmp->op == OpKind::kLe) p = keys_versus_queries(f, *cmp, true, nullptr);
  if (cmp && cmp->op == OpKind::kGe) p = keys_versus_queries(f, *cmp, false, nullptr);
  if (!p || (result.window > 0 && (p->pos != result.positions.pos || p->length != result.positions.length))) return std::nullopt;
  result.positions = *p;
  return result;
}

bool same_pos(const ir::Function& f, ValueId append_pos, const Positions& positions) {
  if (positions.pos != ir::kNoValue) return append_pos == positions.pos;
  const auto zero = splat_constant(f, append_pos);
  return zero && *zero == 0.0;
}

// attention(q, k, v, mask) over the cache, replacing a value of q's layout; kNoValue when it is not.
ValueId raise(Rewriter& rw, ValueId q, ValueId k, ValueId v, ValueId mask, double scale) {
  const ir::Function& f = rw.old();
  const ValueId k_cache = cache_of(f, k);
  const ValueId v_cache = cache_of(f, v);
  if (k_cache == ir::kNoValue || v_cache == ir::kNoValue || f.type(k_cache) != f.type(v_cache)) return ir::kNoValue;
  if (mask == ir::kNoValue || f.type(mask).dtype != ir::DType::kBool) return ir::kNoValue;
  auto cache_mask = match_cache_mask(f, mask);
  if (!cache_mask) return ir::kNoValue;
  const ValueId pos = producer(f, k_cache)->operands[1];
  if (producer(f, v_cache)->operands[1] != pos || !same_pos(f, pos, cache_mask->positions)) return ir::kNoValue;
  const ir::Shape& qs = f.type(q).shape;
  const size_t r = qs.size();
  if (r < 3 || qs[r - 2] != cache_mask->positions.length || !qs[r - 3].is_static()) return ir::kNoValue;
  for (size_t i = 0; i + 3 < r; ++i)
    if (!is_unit(qs[i])) return ir::kNoValue;
  const ir::Dim tokens = qs[r - 2];
  const ir::Shape heads_first{qs[r - 3], tokens, qs[r - 1]};
  const ValueId q_rows = rw.transpose(rw.reshape(rw.map(q), heads_first), {1, 0, 2});  // [T, NH, D]
  ir::Attrs attrs{{"scale", builder_scale(scale)}};
  if (cache_mask->window > 0) attrs["window"] = cache_mask->window;
  const ValueId out = rw.emit(OpKind::kAttention, {q_rows, rw.map(k_cache), rw.map(v_cache), rw.map(pos)}, attrs);
  return rw.reshape(rw.transpose(out, {1, 0, 2}), qs);
}

// The eager form: matmul(P, v) with P = softmax of the masked, scaled q k^T.
ValueId raise_eager(Rewriter& rw, const ir::Node& node) {
  const ir::Function& f = rw.old();
  const UseDef& uses = rw.old_uses();
  const ValueId v = node.operands[1];
  const ValueId probabilities = strip_float_casts(f, node.operands[0]);
  const ir::Node* softmax = producer_of(f, probabilities, OpKind::kSoftmax);
  if (!softmax || !single_use(uses, probabilities)) return ir::kNoValue;
  const size_t rank = f.type(probabilities).shape.size();
  if (normalize_axis(softmax->int_attr("axis", -1), rank) != static_cast<int64_t>(rank) - 1) return ir::kNoValue;
  ValueId scores = strip_float_casts(f, softmax->operands[0]);
  ValueId mask = ir::kNoValue;
  auto minus_infinity = [&](ValueId x) {
    const auto c = splat_constant(f, x);
    return c && std::isinf(*c) && *c < 0;
  };
  if (const ir::Node* where = producer_of(f, scores, OpKind::kWhere); where && minus_infinity(where->operands[2])) {
    mask = where->operands[0];
    scores = where->operands[1];
  } else if (const ir::Node* add = producer_of(f, scores, OpKind::kAdd)) {
    for (int side = 0; side < 2 && mask == ir::kNoValue; ++side) {
      const ir::Node* bias = producer_of(f, add->operands[static_cast<size_t>(1 - side)], OpKind::kWhere);
      const auto zero = bias ? splat_constant(f, bias->operands[1]) : std::nullopt;
      if (!bias || !zero || *zero != 0.0 || !minus_infinity(bias->operands[2])) continue;
      mask = bias->operands[0];
      scores = add->operands[static_cast<size_t>(side)];
    }
  }
  double scale = 1.0;
  if (const ir::Node* mul = producer(f, scores); mul && (mul->op == OpKind::kMul || mul->op == OpKind::kDiv)) {
    const auto c = splat_constant(f, mul->operands[1]);
    if (!c || *c == 0) return ir::kNoValue;
    scale = mul->op == OpKind::kMul ? *c : 1.0 / *c;
    scores = mul->operands[0];
  }
  const ir::Node* qk = producer_of(f, scores, OpKind::kMatmul);
  if (!qk) return ir::kNoValue;
  const ir::Node* kt = producer_of(f, qk->operands[1], OpKind::kTranspose);
  if (!kt) return ir::kNoValue;
  const auto perm = perm_of(*kt);
  std::vector<int64_t> swap = identity_perm(perm.size());
  std::swap(swap[perm.size() - 1], swap[perm.size() - 2]);
  if (perm != swap) return ir::kNoValue;
  return raise(rw, qk->operands[0], kt->operands[0], v, mask, scale);
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Node& node = rw.old().nodes[static_cast<size_t>(index)];
  if (node.op == OpKind::kSdpa) {
    if (node.int_attr("causal", 0) != 0 || node.operands.size() != 4) return ir::kNoValue;
    return raise(rw, node.operands[0], node.operands[1], node.operands[2], node.operands[3], node.float_attr("scale"));
  }
  if (node.op == OpKind::kMatmul && rw.old().type(node.result).shape.size() >= 3) return raise_eager(rw, node);
  return ir::kNoValue;
}

}  // namespace

Expected<int> raise_cache_attention(ir::Module& module) { return rewrite_nodes(module, "attention", rewrite); }

}  // namespace agentcompile::analysis::recognize
