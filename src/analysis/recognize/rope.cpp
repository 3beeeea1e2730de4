// Pass: rope (rule 6).
//
// Hugging Face's rotary embedding, as captured: once per forward, from an inline f32 constant
// inv_freq [D/2] and the positions P = pos + arange(T) (cast to f32):
//   F = outer(P, inv_freq)     matmul(inv[.., D/2, 1], P[.., 1, T]) then a transpose, or a broadcast mul
//   E = concat(F, F) {last axis}
//   C = [cast]([mul](cos(E), s)),  S = [cast]([mul](sin(E), s))      s = attention_scaling (mul by 1 folded)
// each seen through reshapes/broadcasts/transposes (unsqueeze(1) to [1, 1, T, D] against x's layout);
// then per layer, for x [..., D] in any layout ([1, NH, T, D] in torch):
//   y = add(mul(x, C), mul(concat(neg(slice(x, D/2:)), slice(x, :D/2)), S))     (any operand orders)
// is raised to
//   y = layout^-1(rope(layout(x), pos) {frequencies, scale = s when s != 1})
// where layout moves x's positions axis first and merges the other non-feature axes into heads:
// [T, NH, D]. The positions axis is the axis of x that C's positions axis broadcasts against,
// found by following each axis of F (positions, frequencies, unit) through the layout ops up to C;
// when T is a static 1 (decode) every row has position pos and x is just reshaped to [1, NH, D].
// The frequencies are fitted and verified by rope_frequencies.h (theta / llama3 parameters written as
// the builders write them, or the exact table). The glue transposes and reshapes cancel against the
// surrounding ones in simplify.
// Refuses: interleaved (GPT-J) rotation, cos and sin from different angles or scalings, tables not
// computed from an inline constant and pos + arange(T), heads that are not static, a table whose
// positions axis does not line up with an axis of x of the same length.
#include <numeric>

#include "analysis/recognize/layout_axes.h"
#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"
#include "analysis/recognize/rope_frequencies.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

// What each axis of a value in the table's computation holds (layout_axes.h kinds).
enum Axis : int { kPositionsAxis = 1, kFrequencyAxis = 2, kFeatureAxis = 3 };

struct Angles {
  std::vector<double> inv_freq;
  Positions positions;
  AxisKinds axes;  // of F
};

struct Table {
  ValueId angles = ir::kNoValue;  // E (old id)
  double scale = 1.0;
  Positions positions;
  std::vector<double> inv_freq;
  AxisKinds axes;  // of the multiplier as x reads it
};

// The inline inv_freq constant behind `value` (through layout ops and casts to f32).
std::optional<std::vector<double>> frequency_table(const ir::Function& f, ValueId value) {
  std::vector<const ir::Node*> chain;
  value = strip_float_casts(f, strip_layout(f, value, chain));
  const ir::Node* constant = producer_of(f, value, OpKind::kConstant);
  if (!constant || !constant->has_attr("values") || non_unit_dims(f.type(value).shape).size() != 1) return std::nullopt;
  return constant->floats_attr("values");
}

// F: the outer product of the positions and the frequencies, with the kinds of its axes.
std::optional<Angles> match_angles(const ir::Function& f, ValueId value) {
  std::vector<const ir::Node*> chain;
  const ValueId product = strip_layout(f, value, chain);
  const ir::Node* node = producer(f, product);
  if (!node || (node->op != OpKind::kMatmul && node->op != OpKind::kMul)) return std::nullopt;
  const ir::Shape& shape = f.type(product).shape;
  if (shape.size() < 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const ValueId table_side = node->operands[static_cast<size_t>(side)];
    const ValueId positions_side = node->operands[static_cast<size_t>(1 - side)];
    auto inv_freq = frequency_table(f, table_side);
    if (!inv_freq) continue;
    // The positions side: a cast of the i32 positions to f32, through layout ops.
    std::vector<const ir::Node*> pos_chain;
    const ir::Node* cast = producer_of(f, strip_layout(f, positions_side, pos_chain), OpKind::kCast);
    if (!cast || f.type(cast->result).dtype != ir::DType::kF32) continue;
    auto positions = match_positions(f, cast->operands[0]);
    if (!positions) continue;
    AxisKinds axes(shape.size(), kUnitAxis);
    const ir::Dim half = ir::Dim::of(static_cast<int64_t>(inv_freq->size()));
    if (node->op == OpKind::kMatmul) {
      // [.., n, 1] x [.., 1, m]: the table's non-contracted axis and the positions'.
      const size_t r = shape.size();
      if (f.type(node->operands[0]).shape[r - 1] != ir::Dim::of(1)) continue;
      axes[side == 0 ? r - 2 : r - 1] = kFrequencyAxis;
      axes[side == 0 ? r - 1 : r - 2] = kPositionsAxis;
      if (shape[side == 0 ? r - 2 : r - 1] != half) continue;
    } else {
      const ir::Shape& ts = f.type(table_side).shape;
      const ir::Shape& ps = f.type(positions_side).shape;
      for (size_t i = 0; i < shape.size(); ++i) {
        const size_t ti = i + ts.size(), pi = i + ps.size();
        const bool from_table = ti >= shape.size() && !is_unit(ts[ti - shape.size()]);
        const bool from_positions = pi >= shape.size() && !is_unit(ps[pi - shape.size()]);
        if (from_table && from_positions) return std::nullopt;
        if (from_table) axes[i] = kFrequencyAxis;
        if (from_positions) axes[i] = kPositionsAxis;
      }
    }
    axes = replay_axes(f, chain, axes);
    if (axes.empty()) return std::nullopt;
    return Angles{*inv_freq, *positions, axes};
  }
  return std::nullopt;
}

// C or S: [cast]([mul](cos|sin(E), s)) through layout ops, with `trig` cos or sin.
std::optional<Table> match_table(const ir::Function& f, ValueId value, OpKind trig) {
  std::vector<const ir::Node*> chain;
  Table table;
  ValueId v = value;
  while (true) {
    v = strip_float_casts(f, strip_layout(f, v, chain));
    const auto scaled = commuted(f, v, OpKind::kMul, [&](ValueId x) { return !splat_constant(f, x); });
    if (!scaled || !splat_constant(f, scaled->second)) break;
    table.scale *= *splat_constant(f, scaled->second);
    v = scaled->first;
  }
  // Casts and scalings commute with the layout ops; only the layout ops move axes.
  const ir::Node* node = producer_of(f, v, trig);
  if (!node) return std::nullopt;
  table.angles = node->operands[0];
  const ir::Node* concat = producer_of(f, table.angles, OpKind::kConcat);
  if (!concat || concat->operands.size() != 2 || concat->operands[0] != concat->operands[1]) return std::nullopt;
  const size_t rank = f.type(table.angles).shape.size();
  if (normalize_axis(concat->int_attr("axis"), rank) != static_cast<int64_t>(rank) - 1) return std::nullopt;
  auto angles = match_angles(f, concat->operands[0]);
  if (!angles || angles->axes.back() != kFrequencyAxis) return std::nullopt;
  angles->axes.back() = kFeatureAxis;
  // Replay the layout chain between E and the multiplier (collected outermost first, across casts).
  std::vector<const ir::Node*> layout;
  for (const ir::Node* n : chain)
    if (is_layout_step(n->op)) layout.push_back(n);
  table.axes = replay_axes(f, layout, angles->axes);
  if (table.axes.empty()) return std::nullopt;
  table.positions = angles->positions;
  table.inv_freq = std::move(angles->inv_freq);
  return table;
}

struct Rotation {
  ValueId x = ir::kNoValue;
  ValueId sin_table = ir::kNoValue;
  bool upcast = false;  // the rotated x was cast to the tables' float dtype (OLMo-2 multiplies in f32)
};

// The concat of a rotate_half, possibly cast to another float dtype.
const ir::Node* rotate_half_concat(const ir::Function& f, const UseDef& uses, ValueId v, bool* upcast) {
  *upcast = false;
  if (const ir::Node* cast = producer_of(f, v, OpKind::kCast); cast && single_use(uses, v)) {
    *upcast = true;
    v = cast->operands[0];
  }
  return single_use(uses, v) ? producer_of(f, v, OpKind::kConcat) : nullptr;
}

// mul([cast](concat(neg(slice(x, D/2:)), slice(x, :D/2))), S) (either order) defining `value`.
std::optional<Rotation> match_rotation(const ir::Function& f, const UseDef& uses, ValueId value) {
  bool upcast = false;
  const auto product = commuted(f, value, OpKind::kMul, [&](ValueId v) { return rotate_half_concat(f, uses, v, &upcast) != nullptr; });
  if (!product || !single_use(uses, value)) return std::nullopt;
  const ir::Node* concat = rotate_half_concat(f, uses, product->first, &upcast);
  if (concat->operands.size() != 2) return std::nullopt;
  const ir::Node* neg = producer_of(f, concat->operands[0], OpKind::kNeg);
  if (!neg) return std::nullopt;
  const ir::Node* high = producer_of(f, neg->operands[0], OpKind::kSlice);
  const ir::Node* low = producer_of(f, concat->operands[1], OpKind::kSlice);
  if (!high || !low || high->operands[0] != low->operands[0]) return std::nullopt;
  const ValueId x = low->operands[0];
  const ir::Shape& shape = f.type(x).shape;
  const size_t last = shape.size() - 1;
  if (shape.empty() || !shape[last].is_static() || shape[last].value % 2 != 0) return std::nullopt;
  const int64_t half = shape[last].value / 2;
  auto on_last = [&](const ir::Node* s) { return normalize_axis(s->int_attr("axis"), shape.size()) == static_cast<int64_t>(last); };
  const int64_t high_start = high->int_attr("start") < 0 ? high->int_attr("start") + shape[last].value : high->int_attr("start");
  if (!on_last(high) || !on_last(low) || low->int_attr("start") != 0 || high_start != half || low->int_attr("length") != half ||
      high->int_attr("length") != half || normalize_axis(concat->int_attr("axis"), shape.size()) != static_cast<int64_t>(last))
    return std::nullopt;
  if (upcast && f.type(product->first).dtype == f.type(x).dtype) return std::nullopt;
  return Rotation{x, product->second, upcast};
}

ValueId raise(Rewriter& rw, ValueId x, const Table& cos_table, const Table& sin_table) {
  const ir::Function& f = rw.old();
  const ir::Shape& shape = f.type(x).shape;
  const size_t rank = shape.size();
  const AxisKinds& axes = cos_table.axes;
  if (cos_table.angles != sin_table.angles || cos_table.scale != sin_table.scale || axes != sin_table.axes ||
      axes.size() > rank || !ir::is_float(f.type(x).dtype))
    return ir::kNoValue;
  const ir::Dim feature = shape[rank - 1];
  if (feature != ir::Dim::of(static_cast<int64_t>(cos_table.inv_freq.size() * 2))) return ir::kNoValue;
  // The positions axis of x: the one C's positions axis lines up with (right-aligned broadcasting).
  int64_t positions_axis = -1;
  for (size_t j = 0; j + 1 < axes.size(); ++j) {
    if (axes[j] != kPositionsAxis) continue;
    if (positions_axis >= 0) return ir::kNoValue;
    positions_axis = static_cast<int64_t>(rank - axes.size() + j);
  }
  const ir::Dim tokens = cos_table.positions.length;
  const bool single_row = is_unit(tokens);
  if (!single_row && (positions_axis < 0 || shape[static_cast<size_t>(positions_axis)] != tokens)) return ir::kNoValue;
  std::vector<int64_t> perm{single_row ? 0 : positions_axis};
  int64_t heads = 1;
  for (size_t i = 0; i + 1 < rank; ++i) {
    if (!single_row && static_cast<int64_t>(i) == positions_axis) continue;
    if (!shape[i].is_static()) return ir::kNoValue;
    heads *= shape[i].value;
    if (!single_row) perm.push_back(static_cast<int64_t>(i));
  }
  ir::Attrs attrs = fit_rope_frequencies(cos_table.inv_freq);
  if (cos_table.scale != 1.0) attrs["scale"] = cos_table.scale;
  const ValueId pos = cos_table.positions.pos == ir::kNoValue ? rw.scalar(ir::DType::kI32, 0) : rw.map(cos_table.positions.pos);
  if (single_row) {
    const ValueId rows = rw.reshape(rw.map(x), {ir::Dim::of(1), ir::Dim::of(heads), feature});
    return rw.reshape(rw.emit(OpKind::kRope, {rows, pos}, attrs), shape);
  }
  perm.push_back(static_cast<int64_t>(rank - 1));
  const ValueId moved = rw.transpose(rw.map(x), perm);
  const ir::Shape moved_shape = rw.type(moved).shape;
  const ValueId rows = rw.reshape(moved, {tokens, ir::Dim::of(heads), feature});
  const ValueId roped = rw.reshape(rw.emit(OpKind::kRope, {rows, pos}, attrs), moved_shape);
  return rw.transpose(roped, inverse_perm(perm));
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op != OpKind::kAdd) return ir::kNoValue;
  for (int side = 0; side < 2; ++side) {
    auto rotation = match_rotation(f, rw.old_uses(), node.operands[static_cast<size_t>(1 - side)]);
    if (!rotation) continue;
    const ValueId direct = node.operands[static_cast<size_t>(side)];
    // x itself, or (when the rotation was upcast) x cast to the same dtype.
    auto is_x = [&](ValueId v) {
      if (!rotation->upcast) return v == rotation->x;
      const ir::Node* cast = producer_of(f, v, OpKind::kCast);
      return cast && cast->operands[0] == rotation->x && f.type(v).dtype == f.type(node.result).dtype;
    };
    const auto product = commuted(f, direct, OpKind::kMul, is_x);
    if (!product || !single_use(rw.old_uses(), direct)) continue;
    auto cos_table = match_table(f, product->second, OpKind::kCos);
    auto sin_table = match_table(f, rotation->sin_table, OpKind::kSin);
    if (!cos_table || !sin_table) continue;
    if (!rotation->upcast) return raise(rw, rotation->x, *cos_table, *sin_table);
    // Upcast: rope on the narrow x when every reader casts the result straight back (one rounding
    // either way), else on the upcast value.
    const ir::DType narrow = f.type(rotation->x).dtype;
    bool cast_back = !rw.old_uses().is_result[static_cast<size_t>(node.result)];
    for (int user : rw.old_uses().users[static_cast<size_t>(node.result)]) {
      const ir::Node& reader = f.nodes[static_cast<size_t>(user)];
      cast_back = cast_back && reader.op == OpKind::kCast && f.type(reader.result).dtype == narrow;
    }
    if (cast_back) return rw.cast(raise(rw, rotation->x, *cos_table, *sin_table), f.type(node.result).dtype);
    return raise(rw, product->first, *cos_table, *sin_table);
  }
  return ir::kNoValue;
}

}  // namespace

Expected<int> raise_rope(ir::Module& module) { return rewrite_nodes(module, "rope", rewrite); }

}  // namespace agentcompile::analysis::recognize
