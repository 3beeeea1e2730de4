// Constant folding (see fold_constants.h).
#include "analysis/recognize/fold_constants.h"

#include <cmath>
#include <functional>
#include <limits>

#include "analysis/recognize/match.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::DType;
using ir::OpKind;

namespace {

struct Tensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<double> data;
};

std::optional<std::vector<int64_t>> static_sizes(const ir::Shape& shape) {
  std::vector<int64_t> sizes;
  for (const ir::Dim& d : shape) {
    if (!d.is_static()) return std::nullopt;
    sizes.push_back(d.value);
  }
  return sizes;
}

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// Rounds a value to what a tensor of `dtype` holds.
double round_to(DType dtype, double x) {
  switch (dtype) {
    case DType::kF32: return static_cast<float>(x);
    case DType::kF16: return ir::half_to_float(ir::float_to_half(static_cast<float>(x)));
    case DType::kBF16: return ir::bf16_to_float(ir::float_to_bf16(static_cast<float>(x)));
    case DType::kBool: return x != 0 ? 1.0 : 0.0;
    case DType::kI32: {
      if (std::isnan(x)) return 0.0;
      const double t = std::trunc(x);
      return std::fmax(std::fmin(t, 2147483647.0), -2147483648.0);
    }
    default: return x;
  }
}

std::optional<std::vector<double>> evaluate(const ir::Node& node, const std::vector<Tensor>& in,
                                            const std::vector<int64_t>& out_shape, DType out_dtype);

bool is_view(OpKind op) { return op == OpKind::kReshape || op == OpKind::kView || op == OpKind::kBroadcast; }

// Whether `value` is an arange, or one seen through views (reshape, view, broadcast).
bool is_arange_view(const ir::Function& f, ir::ValueId value) {
  for (const ir::Node* node = producer(f, value); node; node = producer(f, node->operands[0])) {
    if (node->op == OpKind::kArange) return true;
    if (!is_view(node->op)) return false;
  }
  return false;
}

std::optional<Tensor> read_operand(const ir::Function& f, ir::ValueId value) {
  const ir::Node* node = producer(f, value);
  if (!node) return std::nullopt;
  auto sizes = static_sizes(f.type(value).shape);
  if (!sizes || count(*sizes) > kMaxFoldedElements) return std::nullopt;
  Tensor t{f.type(value).dtype, *sizes, {}};
  const int64_t n = count(*sizes);
  if (is_view(node->op) && is_arange_view(f, value)) {  // kept unfolded (see fold_to_constant): read its values
    auto inner = read_operand(f, node->operands[0]);
    if (!inner) return std::nullopt;
    auto data = evaluate(*node, {*inner}, *sizes, t.dtype);
    if (!data) return std::nullopt;
    t.data = std::move(*data);
  } else if (node->op == OpKind::kConstant) {
    if (node->has_attr("values")) {
      t.data = node->floats_attr("values");
      if (static_cast<int64_t>(t.data.size()) != n) return std::nullopt;
    } else {
      t.data.assign(static_cast<size_t>(n), node->float_attr("value"));
    }
  } else if (node->op == OpKind::kArange) {
    const double start = node->float_attr("start", 0.0);
    const double step = node->float_attr("step", 1.0);
    for (int64_t i = 0; i < n; ++i) t.data.push_back(round_to(t.dtype, start + static_cast<double>(i) * step));
  } else {
    return std::nullopt;
  }
  return t;
}

// Row-major strides of a shape.
std::vector<int64_t> strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// Element of `t` read at output index `index` of `out_shape` under numpy broadcasting.
double broadcast_at(const Tensor& t, const std::vector<int64_t>& out_shape, int64_t index) {
  const auto out_strides = strides(out_shape);
  const auto in_strides = strides(t.shape);
  const size_t offset = out_shape.size() - t.shape.size();
  int64_t flat = 0;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    const int64_t coordinate = (index / out_strides[d]) % out_shape[d];
    if (d < offset) continue;
    const size_t k = d - offset;
    if (t.shape[k] != 1) flat += coordinate * in_strides[k];
  }
  return t.data[static_cast<size_t>(flat)];
}

std::optional<double> unary(OpKind op, double x) {
  const float v = static_cast<float>(x);
  switch (op) {
    case OpKind::kNeg: return -x;
    case OpKind::kAbs: return std::fabs(x);
    case OpKind::kExp: return std::exp(v);
    case OpKind::kLog: return std::log(v);
    case OpKind::kSqrt: return std::sqrt(v);
    case OpKind::kRsqrt: return 1.0f / std::sqrt(v);
    case OpKind::kReciprocal: return 1.0f / v;
    case OpKind::kSin: return std::sin(v);
    case OpKind::kCos: return std::cos(v);
    case OpKind::kTanh: return std::tanh(v);
    case OpKind::kSigmoid: return 1.0f / (1.0f + std::exp(-v));
    case OpKind::kLogicalNot: return x == 0 ? 1.0 : 0.0;
    default: return std::nullopt;
  }
}

std::optional<double> binary(OpKind op, DType operand_dtype, double a, double b) {
  const bool integer = operand_dtype == DType::kI32;
  const float fa = static_cast<float>(a);
  const float fb = static_cast<float>(b);
  switch (op) {
    case OpKind::kAdd: return integer ? a + b : static_cast<double>(fa + fb);
    case OpKind::kSub: return integer ? a - b : static_cast<double>(fa - fb);
    case OpKind::kMul: return integer ? a * b : static_cast<double>(fa * fb);
    case OpKind::kDiv:
      if (integer) return b == 0 ? std::nullopt : std::optional<double>(std::trunc(a / b));
      return static_cast<double>(fa / fb);
    case OpKind::kPow: return std::pow(fa, fb);
    case OpKind::kMaximum: return std::isnan(a) || std::isnan(b) ? NAN : std::fmax(a, b);
    case OpKind::kMinimum: return std::isnan(a) || std::isnan(b) ? NAN : std::fmin(a, b);
    case OpKind::kEq: return a == b ? 1.0 : 0.0;
    case OpKind::kNe: return a != b ? 1.0 : 0.0;
    case OpKind::kLt: return a < b ? 1.0 : 0.0;
    case OpKind::kLe: return a <= b ? 1.0 : 0.0;
    case OpKind::kGt: return a > b ? 1.0 : 0.0;
    case OpKind::kGe: return a >= b ? 1.0 : 0.0;
    case OpKind::kLogicalAnd: return a != 0 && b != 0 ? 1.0 : 0.0;
    case OpKind::kLogicalOr: return a != 0 || b != 0 ? 1.0 : 0.0;
    default: return std::nullopt;
  }
}

std::optional<std::vector<double>> evaluate(const ir::Node& node, const std::vector<Tensor>& in,
                                            const std::vector<int64_t>& out_shape, DType out_dtype) {
  const int64_t n = count(out_shape);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n));
  switch (node.op) {
    case OpKind::kReshape:
    case OpKind::kView: return in[0].data;
    case OpKind::kBroadcast:
      for (int64_t i = 0; i < n; ++i) out.push_back(broadcast_at(in[0], out_shape, i));
      return out;
    case OpKind::kCast:
      for (double x : in[0].data) out.push_back(round_to(out_dtype, x));
      return out;
    case OpKind::kTranspose: {
      const auto perm = perm_of(node);
      const auto in_strides = strides(in[0].shape);
      const auto out_strides = strides(out_shape);
      for (int64_t i = 0; i < n; ++i) {
        int64_t flat = 0;
        for (size_t d = 0; d < out_shape.size(); ++d)
          flat += ((i / out_strides[d]) % out_shape[d]) * in_strides[static_cast<size_t>(perm[d])];
        out.push_back(in[0].data[static_cast<size_t>(flat)]);
      }
      return out;
    }
    case OpKind::kSlice:
    case OpKind::kConcat: {
      // Both walk the output along `axis`, reading the operand that holds each coordinate.
      const int64_t axis = normalize_axis(node.int_attr("axis"), out_shape.size());
      const auto out_strides = strides(out_shape);
      int64_t start = node.int_attr("start");
      if (node.op == OpKind::kSlice && start < 0) start += in[0].shape[static_cast<size_t>(axis)];
      for (int64_t i = 0; i < n; ++i) {
        int64_t coordinate = (i / out_strides[static_cast<size_t>(axis)]) % out_shape[static_cast<size_t>(axis)];
        size_t which = 0;
        if (node.op == OpKind::kSlice) {
          coordinate += start;
        } else {
          while (coordinate >= in[which].shape[static_cast<size_t>(axis)]) {
            coordinate -= in[which].shape[static_cast<size_t>(axis)];
            ++which;
          }
        }
        const Tensor& t = in[which];
        const auto in_strides = strides(t.shape);
        int64_t flat = 0;
        for (size_t d = 0; d < out_shape.size(); ++d) {
          const int64_t c = static_cast<int64_t>(d) == axis ? coordinate : (i / out_strides[d]) % out_shape[d];
          flat += c * in_strides[d];
        }
        out.push_back(t.data[static_cast<size_t>(flat)]);
      }
      return out;
    }
    case OpKind::kWhere:
      for (int64_t i = 0; i < n; ++i)
        out.push_back(broadcast_at(in[0], out_shape, i) != 0 ? broadcast_at(in[1], out_shape, i) : broadcast_at(in[2], out_shape, i));
      return out;
    default: break;
  }
  if (in.size() == 1) {
    for (double x : in[0].data) {
      auto y = unary(node.op, x);
      if (!y) return std::nullopt;
      out.push_back(round_to(out_dtype, *y));
    }
    return out;
  }
  if (in.size() == 2) {
    for (int64_t i = 0; i < n; ++i) {
      auto y = binary(node.op, in[0].dtype, broadcast_at(in[0], out_shape, i), broadcast_at(in[1], out_shape, i));
      if (!y) return std::nullopt;
      out.push_back(round_to(out_dtype, *y));
    }
    return out;
  }
  return std::nullopt;
}

bool foldable(OpKind op) {
  switch (ir::op_info(op).op_class) {
    case ir::OpClass::kPointwise: return op != OpKind::kSilu && op != OpKind::kGelu && op != OpKind::kErf;
    case ir::OpClass::kLayout: return op != OpKind::kFlip;
    default: return false;
  }
}

}  // namespace

std::optional<ir::Attrs> fold_to_constant(const ir::Function& function, const ir::Node& node, const ir::TensorType& result_type) {
  if (!foldable(node.op) || node.operands.empty()) return std::nullopt;
  // A view of an arange stays one: its readers compute start + step * index where they read it, and
  // the strides of a view are what a kernel needs for that; a dense constant would be data that no
  // kernel can inline (a triangular mask's arange(N)[None, :] and arange(N)[:, None]).
  if (is_view(node.op) && is_arange_view(function, node.operands[0])) return std::nullopt;
  auto out_shape = static_sizes(result_type.shape);
  if (!out_shape || count(*out_shape) > kMaxFoldedElements || count(*out_shape) == 0) return std::nullopt;
  // Nor does arithmetic that broadcasts an arange into more elements (arange(N)[None, :] -
  // arange(N)[:, None]): the result is as cheap to compute where it is read, as a table it is not.
  for (ir::ValueId operand : node.operands) {
    if (!is_arange_view(function, operand)) continue;
    auto sizes = static_sizes(function.type(operand).shape);
    if (!sizes || count(*sizes) < count(*out_shape)) return std::nullopt;
  }
  std::vector<Tensor> in;
  for (ir::ValueId operand : node.operands) {
    auto t = read_operand(function, operand);
    if (!t) return std::nullopt;
    in.push_back(std::move(*t));
  }
  auto data = evaluate(node, in, *out_shape, result_type.dtype);
  if (!data || static_cast<int64_t>(data->size()) != count(*out_shape)) return std::nullopt;
  ir::Attrs attrs{{"dtype", std::string(ir::dtype_name(result_type.dtype))}, {"shape", result_type.shape}};
  bool splat = true;
  for (double v : *data) splat = splat && (v == data->front() || (std::isnan(v) && std::isnan(data->front())));
  if (splat && !data->empty())
    attrs["value"] = data->front();
  else
    attrs["values"] = ir::FloatList(data->begin(), data->end());
  return attrs;
}

}  // namespace agentcompile::analysis::recognize
