// Result-type inference for every op, following the semantics documented in ir/ops.h.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ir/graph.h"

namespace agentcompile::ir {

namespace {

Status op_error(const Node& node, const std::string& what) {
  return error(ErrorCode::kInvalidArgument, std::string(op_name(node.op)) + ": " + what);
}

bool is_scalar_i32(const TensorType& type) { return type.dtype == DType::kI32 && type.shape.empty(); }
// The per-row form of rope, kv_append and attention (ir/ops.h): one i32 per row of x.
bool is_row_positions(const TensorType& type, const TensorType& x) {
  return type.dtype == DType::kI32 && type.shape.size() == 1 && !x.shape.empty() && type.shape[0] == x.shape[0];
}

// Numpy broadcasting over trailing dims; a static 1 stretches to anything.
Expected<Shape> broadcast_shapes(const Node& node, const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) {
      out[i] = *db;
    } else if (!db) {
      out[i] = *da;
    } else if (*da == *db) {
      out[i] = *da;
    } else if (da->is_static() && da->value == 1) {
      out[i] = *db;
    } else if (db->is_static() && db->value == 1) {
      out[i] = *da;
    } else {
      return op_error(node, "cannot broadcast " + shape_to_string(a) + " with " + shape_to_string(b));
    }
  }
  return out;
}

// Normalizes a possibly negative axis; returns -1 when out of range.
int64_t normalize_axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  return axis >= 0 && axis < r ? axis : -1;
}

// Element counts agree when the static products agree and the symbols appear equally often.
bool same_elements(const Shape& a, const Shape& b) {
  auto count = [](const Shape& s, Symbol sym) {
    return std::count_if(s.begin(), s.end(), [&](const Dim& d) { return d.symbol == sym; });
  };
  return static_elements(a) == static_elements(b) && count(a, Symbol::kT) == count(b, Symbol::kT) &&
         count(a, Symbol::kL) == count(b, Symbol::kL);
}

// A shape an attribute may ask for: symbols or non-negative sizes whose product fits in int64
// (static_elements would overflow otherwise).
bool is_sane_shape(const Shape& shape) {
  int64_t product = 1;
  for (const Dim& d : shape) {
    if (!d.is_static()) continue;
    if (d.value < 0 || __builtin_mul_overflow(product, d.value, &product)) return false;
  }
  return true;
}

bool is_numeric(DType dtype) { return is_float(dtype) || dtype == DType::kI32; }

// A plain dtype named by a string attribute (constant, arange, cast).
Expected<DType> dtype_attr(const Node& node, const char* key) {
  auto dtype = parse_dtype(node.string_attr(key));
  if (!dtype || is_quantized(*dtype) || *dtype == DType::kI64)
    return op_error(node, std::string("attr ") + key + " '" + node.string_attr(key) + "' is not one of f32, f16, bf16, i32, bool");
  return *dtype;
}

// The rows a state's first axis has; the state shape with dim `axis` replaced by `rows`.
Shape replace_dim(const Shape& shape, size_t axis, const Dim& dim) {
  Shape out = shape;
  out[axis] = dim;
  return out;
}

// kv_append and attention take their position at operand `at`: either one i32[] for every row (rows
// [pos, pos + T) of one sequence), or, in the per-row form, pos i32[T] and base i32[T] (row t of x
// belongs to the sequence whose cache rows start at base[t], at position pos[t]).
Status check_positions(const Node& node, const TensorType& x, const std::vector<TensorType>& in, size_t at) {
  const bool rows = in.size() == at + 2;
  if (!rows) {
    if (!is_scalar_i32(in[at])) return op_error(node, "pos must be i32[], got " + in[at].to_string());
    return Status::ok();
  }
  for (size_t i = at; i < at + 2; ++i)
    if (!is_row_positions(in[i], x))
      return op_error(node, std::string(i == at ? "pos" : "base") + " of the per-row form must be i32[" +
                                x.shape[0].to_string() + "] (one per row), got " + in[i].to_string());
  return Status::ok();
}

Status check_rope_frequencies(const Node& node, const TensorType& x) {
  const Dim& d = x.shape[2];
  if (!d.is_static() || d.value % 2 != 0 || d.value <= 0) return op_error(node, "head dim must be static, even and positive");
  if (node.has_attr("inv_freq")) {
    if (node.has_attr("theta")) return op_error(node, "give either attr inv_freq or attr theta, not both");
    const FloatList table = node.floats_attr("inv_freq");
    if (static_cast<int64_t>(table.size()) != d.value / 2)
      return op_error(node, "attr inv_freq must be a float list of " + std::to_string(d.value / 2) + " values (D/2)");
    for (double f : table)
      if (!std::isfinite(f)) return op_error(node, "attr inv_freq holds a value that is not finite");
    return Status::ok();
  }
  const std::string scaling = node.string_attr("scaling", "none");
  if (scaling != "none" && scaling != "llama3") return op_error(node, "unknown scaling '" + scaling + "'");
  if (!(node.float_attr("theta") > 0)) return op_error(node, "attr theta must be positive (or give attr inv_freq)");
  return Status::ok();
}

}  // namespace

Expected<TensorType> infer_result_type(const Module& module, const Function& function, const Node& node) {
  const OpInfo& info = op_info(node.op);
  const int operand_count = static_cast<int>(node.operands.size());
  if (operand_count < info.min_operands || operand_count > info.max_operands)
    return op_error(node, "takes " + std::to_string(info.min_operands) + ".." + std::to_string(info.max_operands) +
                              " operands, got " + std::to_string(operand_count));
  std::vector<TensorType> in;
  for (ValueId id : node.operands) {
    if (id < 0 || id >= static_cast<ValueId>(function.values.size()))
      return op_error(node, "operand %" + std::to_string(id) + " is not a value of " + function.name);
    in.push_back(function.type(id));
  }

  switch (node.op) {
    case OpKind::kWeight: {
      const std::string name = node.string_attr("name");
      const ParamDecl* param = module.find_param(name);
      if (!param) return op_error(node, "module has no parameter named '" + name + "'");
      return param->type;
    }
    case OpKind::kEmbedding: {
      if (in[0].shape.size() != 2) return op_error(node, "table must be rank 2, got " + in[0].to_string());
      if (in[1].dtype != DType::kI32 || in[1].shape.size() != 1)
        return op_error(node, "ids must be i32[T], got " + in[1].to_string());
      // A quantized table says in attr dtype what float type its rows are dequantized to.
      DType out = in[0].dtype;
      if (is_quantized(out) != node.has_attr("dtype"))
        return op_error(node, is_quantized(out) ? "a quantized table " + in[0].to_string() + " needs attr dtype (the rows' float type)"
                                                : "attr dtype is for quantized tables; this table is " + in[0].to_string());
      if (is_quantized(out)) {
        AC_ASSIGN_OR_RETURN(out, dtype_attr(node, "dtype"));
        if (!is_float(out)) return op_error(node, "attr dtype must be a float type, got " + node.string_attr("dtype"));
      }
      return TensorType{out, {in[1].shape[0], in[0].shape[1]}};
    }
    case OpKind::kLinear: {
      const auto& x = in[0];
      const auto& w = in[1];
      if (x.shape.empty() || w.shape.size() != 2)
        return op_error(node, "expects x[...,K] and w[N,K], got " + x.to_string() + " and " + w.to_string());
      if (x.shape.back() != w.shape[1])
        return op_error(node, "K of x " + x.to_string() + " differs from K of w " + w.to_string());
      if (is_quantized(w.dtype) && !is_float(x.dtype))
        return op_error(node, "a quantized weight " + w.to_string() + " multiplies float x, got " + x.to_string());
      if (in.size() == 3 && (in[2].shape.size() != 1 || in[2].shape[0] != w.shape[0]))
        return op_error(node, "bias " + in[2].to_string() + " does not match N of w " + w.to_string());
      Shape out(x.shape.begin(), x.shape.end() - 1);
      out.push_back(w.shape[0]);
      return TensorType{x.dtype, out};
    }
    case OpKind::kMatmul: {
      const auto& a = in[0];
      const auto& b = in[1];
      if (a.shape.size() < 2 || a.shape.size() != b.shape.size())
        return op_error(node, "operands must have equal rank >= 2, got " + a.to_string() + " and " + b.to_string());
      if (a.dtype != b.dtype) return op_error(node, "dtypes differ: " + a.to_string() + " vs " + b.to_string());
      const size_t r = a.shape.size();
      for (size_t i = 0; i + 2 < r; ++i)
        if (a.shape[i] != b.shape[i]) return op_error(node, "batch dims differ: " + a.to_string() + " vs " + b.to_string());
      if (a.shape[r - 1] != b.shape[r - 2])
        return op_error(node, "inner dims differ: " + a.to_string() + " vs " + b.to_string());
      Shape out(a.shape.begin(), a.shape.end() - 1);
      out.push_back(b.shape[r - 1]);
      return TensorType{a.dtype, out};
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
    case OpKind::kEq:
    case OpKind::kNe:
    case OpKind::kLt:
    case OpKind::kLe:
    case OpKind::kGt:
    case OpKind::kGe:
    case OpKind::kLogicalAnd:
    case OpKind::kLogicalOr: {
      if (in[0].dtype != in[1].dtype)
        return op_error(node, "dtypes differ: " + in[0].to_string() + " vs " + in[1].to_string());
      const bool logical = node.op == OpKind::kLogicalAnd || node.op == OpKind::kLogicalOr;
      const bool float_only = node.op == OpKind::kPow || node.op == OpKind::kMaximum || node.op == OpKind::kMinimum;
      if (logical && in[0].dtype != DType::kBool) return op_error(node, "needs bool operands, got " + in[0].to_string());
      if (float_only && !is_float(in[0].dtype)) return op_error(node, "needs float operands, got " + in[0].to_string());
      if (!logical && !is_comparison(node.op) && !is_numeric(in[0].dtype))
        return op_error(node, "needs float or i32 operands, got " + in[0].to_string());
      AC_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(node, in[0].shape, in[1].shape));
      return TensorType{is_comparison(node.op) || logical ? DType::kBool : in[0].dtype, out};
    }
    case OpKind::kWhere: {
      if (in[0].dtype != DType::kBool) return op_error(node, "condition must be bool, got " + in[0].to_string());
      if (in[1].dtype != in[2].dtype)
        return op_error(node, "dtypes differ: " + in[1].to_string() + " vs " + in[2].to_string());
      AC_ASSIGN_OR_RETURN(Shape ab, broadcast_shapes(node, in[1].shape, in[2].shape));
      AC_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(node, in[0].shape, ab));
      return TensorType{in[1].dtype, out};
    }
    case OpKind::kLog:
    case OpKind::kLog1p:
    case OpKind::kExpm1:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kTanh:
    case OpKind::kSigmoid:
    case OpKind::kRelu:
    case OpKind::kErf:
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kReciprocal:
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
    case OpKind::kLeakyRelu:
    case OpKind::kClamp:
      if (!is_float(in[0].dtype)) return op_error(node, "needs a float operand, got " + in[0].to_string());
      if (node.op == OpKind::kClamp && !node.has_attr("lo") && !node.has_attr("hi"))
        return op_error(node, "needs attr lo, attr hi or both");
      if (node.op == OpKind::kLeakyRelu && !node.has_attr("slope")) return op_error(node, "missing attr slope");
      return in[0];
    case OpKind::kGelu: {
      if (!is_float(in[0].dtype)) return op_error(node, "needs a float operand, got " + in[0].to_string());
      const std::string approximate = node.string_attr("approximate", "none");
      if (approximate != "none" && approximate != "tanh")
        return op_error(node, "attr approximate must be \"none\" or \"tanh\", got '" + approximate + "'");
      return in[0];
    }
    case OpKind::kAbs:
    case OpKind::kSign:
      if (!is_numeric(in[0].dtype)) return op_error(node, "needs a float or i32 operand, got " + in[0].to_string());
      return in[0];
    case OpKind::kLogicalNot:
      if (in[0].dtype != DType::kBool) return op_error(node, "needs a bool operand, got " + in[0].to_string());
      return in[0];
    case OpKind::kSilu:
    case OpKind::kExp:
      if (!is_float(in[0].dtype)) return op_error(node, "needs a float operand, got " + in[0].to_string());
      return in[0];
    case OpKind::kNeg:
      if (!is_numeric(in[0].dtype)) return op_error(node, "needs a float or i32 operand, got " + in[0].to_string());
      return in[0];
    case OpKind::kCast: {
      AC_ASSIGN_OR_RETURN(DType dtype, dtype_attr(node, "dtype"));
      return TensorType{dtype, in[0].shape};
    }
    case OpKind::kRmsNorm: {
      if (in[0].shape.empty() || in[1].shape.size() != 1 || in[1].shape[0] != in[0].shape.back())
        return op_error(node, "weight " + in[1].to_string() + " does not match last axis of " + in[0].to_string());
      if (!node.attrs.count("eps")) return op_error(node, "missing attr eps");
      return in[0];
    }
    case OpKind::kLayerNorm: {
      if (in[0].shape.empty() || !is_float(in[0].dtype)) return op_error(node, "x must be a float tensor of rank >= 1, got " + in[0].to_string());
      for (size_t i = 1; i < in.size(); ++i)
        if (in[i].shape.size() != 1 || in[i].shape[0] != in[0].shape.back())
          return op_error(node, (i == 1 ? "weight " : "bias ") + in[i].to_string() + " does not match last axis of " + in[0].to_string());
      if (!node.attrs.count("eps")) return op_error(node, "missing attr eps");
      return in[0];
    }
    case OpKind::kRope: {
      if (in[0].shape.size() != 3) return op_error(node, "x must be [T, heads, D], got " + in[0].to_string());
      if (!is_scalar_i32(in[1]) && !is_row_positions(in[1], in[0]))
        return op_error(node, "pos must be i32[] or one position per row, i32[" + in[0].shape[0].to_string() + "], got " + in[1].to_string());
      if (!is_float(in[0].dtype)) return op_error(node, "needs a float operand, got " + in[0].to_string());
      AC_TRY(check_rope_frequencies(node, in[0]));
      return in[0];
    }
    case OpKind::kReshape:
    case OpKind::kView: {
      const Shape target = node.dims_attr("shape");
      if (!is_sane_shape(target) || !is_sane_shape(in[0].shape))
        return op_error(node, "shape " + shape_to_string(target) + " has a negative or overflowing size");
      if (!same_elements(in[0].shape, target))
        return op_error(node, "cannot reshape " + in[0].to_string() + " to " + shape_to_string(target));
      return TensorType{in[0].dtype, target};
    }
    case OpKind::kTranspose: {
      const auto perm = node.dims_attr("perm");
      const size_t rank = in[0].shape.size();
      std::vector<bool> seen(rank, false);
      if (perm.size() != rank) return op_error(node, "perm has wrong length for " + in[0].to_string());
      Shape out;
      for (const Dim& p : perm) {
        if (!p.is_static() || p.value < 0 || p.value >= static_cast<int64_t>(rank) || seen[p.value])
          return op_error(node, "perm " + shape_to_string(perm) + " is not a permutation");
        seen[p.value] = true;
        out.push_back(in[0].shape[p.value]);
      }
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kSlice: {
      const int64_t axis = normalize_axis(node.int_attr("axis"), in[0].shape.size());
      if (axis < 0) return op_error(node, "axis out of range for " + in[0].to_string());
      const int64_t start = node.int_attr("start");
      const int64_t length = node.int_attr("length", 0);
      if (length < 1) return op_error(node, "attr length must be >= 1");
      const Dim& dim = in[0].shape[axis];
      if (dim.is_static()) {
        const int64_t begin = start < 0 ? start + dim.value : start;
        if (begin < 0 || length > dim.value - begin)
          return op_error(node, "slice [" + std::to_string(start) + ", +" + std::to_string(length) +
                                    ") out of range of " + in[0].to_string());
      } else if (start < 0 && start > -length) {
        return op_error(node, "slice from the end runs past the end");
      }
      Shape out = in[0].shape;
      out[axis] = Dim::of(length);
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kBroadcast: {
      const Shape target = node.dims_attr("shape");
      if (!is_sane_shape(target)) return op_error(node, "shape " + shape_to_string(target) + " has a negative size");
      AC_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(node, in[0].shape, target));
      if (out != target) return op_error(node, "cannot broadcast " + in[0].to_string() + " to " + shape_to_string(target));
      return TensorType{in[0].dtype, target};
    }
    case OpKind::kConcat: {
      const int64_t axis = normalize_axis(node.int_attr("axis"), in[0].shape.size());
      if (axis < 0) return op_error(node, "axis out of range for " + in[0].to_string());
      Shape out = in[0].shape;
      for (size_t i = 1; i < in.size(); ++i) {
        if (in[i].dtype != in[0].dtype || in[i].shape.size() != out.size())
          return op_error(node, "operand " + std::to_string(i) + " " + in[i].to_string() + " does not match " + in[0].to_string());
        for (size_t d = 0; d < out.size(); ++d) {
          if (static_cast<int64_t>(d) == axis) continue;
          if (in[i].shape[d] != out[d])
            return op_error(node, "operand " + std::to_string(i) + " " + in[i].to_string() + " differs from " +
                                      in[0].to_string() + " off the concat axis");
        }
        const Dim& a = out[axis];
        const Dim& b = in[i].shape[axis];
        if (!a.is_static() || !b.is_static())
          return op_error(node, "concat along a symbolic dim (" + in[0].to_string() + ", " + in[i].to_string() + ") is not supported");
        out[axis] = Dim::of(a.value + b.value);
      }
      return TensorType{in[0].dtype, out};
    }
    case OpKind::kFlip:
      if (normalize_axis(node.int_attr("axis"), in[0].shape.size()) < 0)
        return op_error(node, "axis out of range for " + in[0].to_string());
      return in[0];
    case OpKind::kConstant: {
      AC_ASSIGN_OR_RETURN(DType dtype, dtype_attr(node, "dtype"));
      const Shape shape = node.dims_attr("shape");
      if (!shape_is_static(shape) || !is_sane_shape(shape)) return op_error(node, "attr shape must be static, got " + shape_to_string(shape));
      const bool splat = node.has_attr("value");
      const bool dense = node.has_attr("values");
      if (splat == dense) return op_error(node, "needs exactly one of attr value and attr values");
      if (dense && static_cast<int64_t>(node.floats_attr("values").size()) != static_elements(shape))
        return op_error(node, "attr values holds " + std::to_string(node.floats_attr("values").size()) + " numbers for shape " +
                                  shape_to_string(shape));
      return TensorType{dtype, shape};
    }
    case OpKind::kArange: {
      AC_ASSIGN_OR_RETURN(DType dtype, dtype_attr(node, "dtype"));
      if (dtype == DType::kBool) return op_error(node, "attr dtype must be i32 or a float");
      const Shape length = node.dims_attr("length");
      if (length.size() != 1 || (length[0].is_static() && length[0].value < 0))
        return op_error(node, "attr length must be one dim (a size, T or L)");
      return TensorType{dtype, length};
    }
    case OpKind::kRandomUniform: {
      if (!node.has_attr("seed")) return op_error(node, "needs attr seed (an integer)");
      const int64_t seed = node.int_attr("seed");
      if (seed < 0 || seed >= (int64_t{1} << 53)) return op_error(node, "attr seed must be in [0, 2^53), got " + std::to_string(seed));
      const Shape shape = node.dims_attr("shape");
      for (const Dim& d : shape)
        if (d.is_static() && d.value < 0) return op_error(node, "attr shape has a negative dim: " + shape_to_string(shape));
      return TensorType{DType::kF32, shape};
    }
    case OpKind::kIndexSelect: {
      const int64_t axis = normalize_axis(node.int_attr("axis"), in[0].shape.size());
      if (axis < 0) return op_error(node, "axis out of range for " + in[0].to_string());
      if (in[1].dtype != DType::kI32 || in[1].shape.size() != 1) return op_error(node, "index must be i32[n], got " + in[1].to_string());
      return TensorType{in[0].dtype, replace_dim(in[0].shape, static_cast<size_t>(axis), in[1].shape[0])};
    }
    case OpKind::kGather: {
      const int64_t axis = normalize_axis(node.int_attr("axis"), in[0].shape.size());
      if (axis < 0) return op_error(node, "axis out of range for " + in[0].to_string());
      if (in[1].dtype != DType::kI32 || in[1].shape.size() != in[0].shape.size())
        return op_error(node, "index must be i32 of x's rank, got " + in[1].to_string() + " for " + in[0].to_string());
      return TensorType{in[0].dtype, in[1].shape};
    }
    case OpKind::kIndexCopy: {
      const std::string state_name = node.string_attr("state");
      const StateDecl* state = module.find_state(state_name);
      if (!state) return op_error(node, "module has no state named '" + state_name + "'");
      const int64_t axis = normalize_axis(node.int_attr("axis"), state->type.shape.size());
      if (axis < 0) return op_error(node, "axis out of range for state " + state_name + " " + state->type.to_string());
      if (in[1].dtype != DType::kI32 || in[1].shape.size() != 1) return op_error(node, "index must be i32[n], got " + in[1].to_string());
      const TensorType expected{state->type.dtype, replace_dim(state->type.shape, static_cast<size_t>(axis), in[1].shape[0])};
      if (in[0] != expected)
        return op_error(node, "source " + in[0].to_string() + " does not fit state " + state_name + " " + state->type.to_string() +
                                  " (expected " + expected.to_string() + ")");
      return state->type;
    }
    case OpKind::kSdpa: {
      const auto& q = in[0];
      const auto& k = in[1];
      const auto& v = in[2];
      const size_t r = q.shape.size();
      if (r < 3 || k.shape.size() != r || v.shape.size() != r)
        return op_error(node, "expects q[..., NH, S, D], k and v of the same rank >= 3, got " + q.to_string() + ", " + k.to_string() + ", " + v.to_string());
      if (!is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype) return op_error(node, "q, k and v must share one float dtype");
      for (size_t i = 0; i + 3 < r; ++i)
        if (q.shape[i] != k.shape[i] || q.shape[i] != v.shape[i]) return op_error(node, "batch dims differ: " + q.to_string() + " vs " + k.to_string());
      if (q.shape[r - 1] != k.shape[r - 1]) return op_error(node, "head dims of q and k differ: " + q.to_string() + " vs " + k.to_string());
      if (k.shape[r - 2] != v.shape[r - 2] || k.shape[r - 3] != v.shape[r - 3])
        return op_error(node, "k and v disagree: " + k.to_string() + " vs " + v.to_string());
      const Dim& heads = q.shape[r - 3];
      const Dim& kv_heads = k.shape[r - 3];
      if (node.int_attr("gqa", 0) != 0) {
        if (!heads.is_static() || !kv_heads.is_static() || kv_heads.value <= 0 || heads.value % kv_heads.value != 0)
          return op_error(node, "query heads must be a multiple of kv heads: " + q.to_string() + " vs " + k.to_string());
      } else if (heads != kv_heads) {
        return op_error(node, "query and key heads differ without attr gqa: " + q.to_string() + " vs " + k.to_string());
      }
      if (!node.attrs.count("scale")) return op_error(node, "missing attr scale");
      Shape out = q.shape;
      out[r - 1] = v.shape[r - 1];
      if (in.size() == 4) {
        if (in[3].dtype != DType::kBool && in[3].dtype != q.dtype)
          return op_error(node, "mask must be bool or q's dtype, got " + in[3].to_string());
        Shape scores = q.shape;
        scores[r - 1] = k.shape[r - 2];
        AC_ASSIGN_OR_RETURN(Shape joined, broadcast_shapes(node, in[3].shape, scores));
        if (joined != scores) return op_error(node, "mask " + in[3].to_string() + " does not broadcast to " + shape_to_string(scores));
      }
      return TensorType{q.dtype, out};
    }
    case OpKind::kKvAppend: {
      const std::string state_name = node.string_attr("state");
      const StateDecl* state = module.find_state(state_name);
      if (!state) return op_error(node, "module has no state named '" + state_name + "'");
      if (in[0].shape.size() != 3 || state->type.shape.size() != 3 || in[0].shape[1] != state->type.shape[1] ||
          in[0].shape[2] != state->type.shape[2] || in[0].dtype != state->type.dtype)
        return op_error(node, "x " + in[0].to_string() + " does not fit state " + state_name + " " + state->type.to_string());
      AC_TRY(check_positions(node, in[0], in, 1));
      return state->type;
    }
    case OpKind::kAttention: {
      const auto& q = in[0];
      const auto& k = in[1];
      const auto& v = in[2];
      if (q.shape.size() != 3 || k.shape.size() != 3 || v.shape != k.shape)
        return op_error(node, "expects q[T,NH,D], k and v [L,KV,D], got " + q.to_string() + ", " + k.to_string() + ", " + v.to_string());
      if (q.shape[2] != k.shape[2]) return op_error(node, "head dims differ: " + q.to_string() + " vs " + k.to_string());
      if (!q.shape[1].is_static() || !k.shape[1].is_static() || k.shape[1].value <= 0 ||
          q.shape[1].value % k.shape[1].value != 0)
        return op_error(node, "query heads must be a multiple of kv heads: " + q.to_string() + " vs " + k.to_string());
      AC_TRY(check_positions(node, q, in, 3));
      if (!node.attrs.count("scale")) return op_error(node, "missing attr scale");
      if (node.int_attr("window", 0) < 0) return op_error(node, "attr window must be >= 0");
      return q;
    }
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
      if (normalize_axis(node.int_attr("axis", -1), in[0].shape.size()) < 0)
        return op_error(node, "axis out of range for " + in[0].to_string());
      if (!is_float(in[0].dtype)) return op_error(node, "needs a float operand, got " + in[0].to_string());
      return in[0];
    case OpKind::kCumsum:
    case OpKind::kCumprod:
      if (normalize_axis(node.int_attr("axis", -1), in[0].shape.size()) < 0)
        return op_error(node, "axis out of range for " + in[0].to_string());
      if (!is_numeric(in[0].dtype)) return op_error(node, "needs a float or i32 operand, got " + in[0].to_string());
      return in[0];
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceMean:
    case OpKind::kReduceProd:
    case OpKind::kArgmax:
    case OpKind::kArgmin: {
      const int64_t axis = normalize_axis(node.int_attr("axis", -1), in[0].shape.size());
      if (axis < 0) return op_error(node, "axis out of range for " + in[0].to_string());
      const bool index = node.op == OpKind::kArgmax || node.op == OpKind::kArgmin;
      if (node.op == OpKind::kReduceMean ? !is_float(in[0].dtype) : !is_numeric(in[0].dtype))
        return op_error(node, "cannot reduce " + in[0].to_string());
      Shape out = in[0].shape;
      if (node.int_attr("keepdim", 0) != 0)
        out[axis] = Dim::of(1);
      else
        out.erase(out.begin() + axis);
      return TensorType{index ? DType::kI32 : in[0].dtype, out};
    }
    case OpKind::kAllReduce:
    case OpKind::kAllGather: {
      const int64_t ranks = node.int_attr("ranks", 0);
      if (ranks < 1) return op_error(node, "attr ranks must be >= 1, got " + std::to_string(ranks));
      if (!is_float(in[0].dtype)) return op_error(node, "needs a float operand, got " + in[0].to_string());
      if (node.op == OpKind::kAllReduce) return in[0];
      const int64_t axis = normalize_axis(node.int_attr("axis", -1), in[0].shape.size());
      if (axis < 0) return op_error(node, "axis out of range for " + in[0].to_string());
      if (!in[0].shape[static_cast<size_t>(axis)].is_static())
        return op_error(node, "gathers along a symbolic dim of " + in[0].to_string());
      TensorType out = in[0];
      out.shape[static_cast<size_t>(axis)] = Dim::of(out.shape[static_cast<size_t>(axis)].value * ranks);
      return out;
    }
  }
  return op_error(node, "no type rule");
}

}  // namespace agentcompile::ir
