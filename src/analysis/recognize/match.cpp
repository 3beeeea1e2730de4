// Pattern-matching helpers (see match.h).
#include "analysis/recognize/match.h"

#include <cmath>

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

const ir::Node* producer(const ir::Function& f, ValueId value) {
  if (value < 0 || static_cast<size_t>(value) >= f.values.size()) return nullptr;
  const int32_t index = f.value(value).producer;
  return index < 0 ? nullptr : &f.nodes[static_cast<size_t>(index)];
}

const ir::Node* producer_of(const ir::Function& f, ValueId value, OpKind op) {
  const ir::Node* node = producer(f, value);
  return node && node->op == op ? node : nullptr;
}

std::optional<double> splat_constant(const ir::Function& f, ValueId value) {
  const ir::Node* node = producer(f, value);
  while (node && (node->op == OpKind::kReshape || node->op == OpKind::kView || node->op == OpKind::kBroadcast))
    node = producer(f, node->operands[0]);
  if (!node || node->op != OpKind::kConstant) return std::nullopt;
  if (node->has_attr("values")) {
    const ir::FloatList values = node->floats_attr("values");
    if (values.empty()) return std::nullopt;
    for (double v : values)
      if (v != values[0]) return std::nullopt;
    return values[0];
  }
  if (!node->has_attr("value")) return std::nullopt;
  return node->float_attr("value");
}

bool near_f32(double a, double b, int ulps) {
  if (a == b) return true;
  if (!std::isfinite(a) || !std::isfinite(b)) return false;
  const double ulp = std::abs(static_cast<double>(std::nextafter(static_cast<float>(b), INFINITY)) -
                              static_cast<double>(static_cast<float>(b)));
  return std::abs(a - b) <= ulps * ulp;
}

bool is_constant_near(const ir::Function& f, ValueId value, double expected, int ulps) {
  const auto constant = splat_constant(f, value);
  return constant && near_f32(*constant, expected, ulps);
}

int use_count(const UseDef& uses, ValueId value) {
  int count = static_cast<int>(uses.users[static_cast<size_t>(value)].size());
  return count + (uses.is_result[static_cast<size_t>(value)] ? 1 : 0);
}

bool single_use(const UseDef& uses, ValueId value) { return use_count(uses, value) == 1; }

bool regroups(OpKind op) {
  return op == OpKind::kReduceSum || op == OpKind::kReduceMean || op == OpKind::kReduceMax || op == OpKind::kReduceMin ||
         op == OpKind::kReduceProd;
}

std::vector<bool> weight_only_values(const ir::Function& f) {
  std::vector<bool> weight_only(f.values.size(), false);
  for (const ir::Node& node : f.nodes) {
    bool only = !ir::has_side_effect(node.op);
    if (node.op == OpKind::kArange) only = node.dims_attr("length").size() == 1 && node.dims_attr("length")[0].is_static();
    for (ValueId operand : node.operands) only = only && weight_only[static_cast<size_t>(operand)];
    weight_only[static_cast<size_t>(node.result)] = only;
  }
  return weight_only;
}

ValueId strip_float_casts(const ir::Function& f, ValueId value) {
  while (const ir::Node* cast = producer_of(f, value, OpKind::kCast)) {
    const ir::DType from = f.type(cast->operands[0]).dtype;
    const ir::DType to = f.type(value).dtype;
    if (from != to && !(ir::is_float(from) && ir::is_float(to))) break;
    value = cast->operands[0];
  }
  return value;
}

ValueId strip_index_layout(const ir::Function& f, ValueId value) {
  while (const ir::Node* node = producer(f, value)) {
    const bool layout = node->op == OpKind::kReshape || node->op == OpKind::kView;
    const bool index_cast = node->op == OpKind::kCast && f.type(node->operands[0]).dtype == ir::DType::kI32 &&
                            f.type(value).dtype == ir::DType::kI32;
    if (!layout && !index_cast) break;
    value = node->operands[0];
  }
  return value;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  return axis >= 0 && axis < r ? axis : -1;
}

bool is_unit(const ir::Dim& dim) { return dim.is_static() && dim.value == 1; }

ir::Shape non_unit_dims(const ir::Shape& shape) {
  ir::Shape out;
  for (const ir::Dim& d : shape)
    if (!is_unit(d)) out.push_back(d);
  return out;
}

namespace {
// arange(0, T) of i32 with step 1: its length.
std::optional<ir::Dim> ramp_from_zero(const ir::Function& f, ValueId value) {
  const ir::Node* node = producer_of(f, value, OpKind::kArange);
  if (!node || f.type(value).dtype != ir::DType::kI32) return std::nullopt;
  if (node->float_attr("start", 0.0) != 0.0 || node->float_attr("step", 1.0) != 1.0) return std::nullopt;
  const ir::Shape length = node->dims_attr("length");
  if (length.size() != 1) return std::nullopt;
  return length[0];
}
}  // namespace

std::optional<Positions> match_positions(const ir::Function& f, ValueId value) {
  value = strip_index_layout(f, value);
  if (f.type(value).dtype != ir::DType::kI32 || non_unit_dims(f.type(value).shape).size() > 1) return std::nullopt;
  if (auto length = ramp_from_zero(f, value)) return Positions{ir::kNoValue, *length};
  const ir::Node* add = producer_of(f, value, OpKind::kAdd);
  if (!add) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const ValueId pos = add->operands[static_cast<size_t>(i)];
    const ValueId ramp = strip_index_layout(f, add->operands[static_cast<size_t>(1 - i)]);
    const ir::TensorType& pos_type = f.type(pos);
    if (pos_type.dtype != ir::DType::kI32 || !pos_type.shape.empty()) continue;
    if (auto length = ramp_from_zero(f, ramp)) return Positions{pos, *length};
  }
  return std::nullopt;
}

bool is_narrow_float(ir::DType dtype) { return ir::is_float(dtype) && ir::dtype_size(dtype) < 4; }

}  // namespace agentcompile::analysis::recognize
