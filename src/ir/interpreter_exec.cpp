// One IR node at a time: operand tensors in, result tensor out, following ir/ops.h exactly.
//
// Result shapes come from the node's IR type resolved with this call's T and L; the planner checked
// every declared type against inference, so operand shapes agree with their types and the kernels'
// index arithmetic stays in bounds. What types cannot promise (token ids, positions, slices of T)
// is checked here against the actual values.
#include "ir/interpreter_exec.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace agentcompile::ir::exec {

int64_t Tensor::elements() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

Tensor make_tensor(DType dtype, std::vector<int64_t> shape) {
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  const auto count = static_cast<size_t>(tensor.elements());
  if (dtype == DType::kI32)
    tensor.i32 = std::make_shared<std::vector<int32_t>>(count);
  else
    tensor.f32 = std::make_shared<std::vector<float>>(count);
  return tensor;
}

namespace {

Status invalid(const std::string& what) { return error(ErrorCode::kInvalidArgument, what); }

int64_t normalize_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// A tensor viewed as [outer, shape[axis], inner] around `axis`.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis) {
  AxisSplit split;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      split.outer *= shape[d];
    else if (d == axis)
      split.n = shape[d];
    else
      split.inner *= shape[d];
  }
  return split;
}

// The same storage under another dtype/shape (views, reshapes, same-class casts).
Tensor alias(const Tensor& x, DType dtype, std::vector<int64_t> shape) {
  Tensor out = x;
  out.dtype = dtype;
  out.shape = std::move(shape);
  return out;
}

Expected<Tensor> run_binary(const Node& node, const Tensor& a, const Tensor& b, Tensor out) {
  kernels::Binary op = kernels::Binary::kAdd;
  switch (node.op) {
    case OpKind::kSub: op = kernels::Binary::kSub; break;
    case OpKind::kMul: op = kernels::Binary::kMul; break;
    case OpKind::kDiv: op = kernels::Binary::kDiv; break;
    default: break;
  }
  if (a.is_int()) {
    if (op == kernels::Binary::kDiv && std::find(b.i32->begin(), b.i32->end(), 0) != b.i32->end())
      return invalid("integer division by zero");
    kernels::binary(op, a.i(), a.shape, b.i(), b.shape, out.i32->data(), out.shape);
  } else {
    kernels::binary(op, a.f(), a.shape, b.f(), b.shape, out.f32->data(), out.shape);
  }
  return out;
}

template <typename F>
Tensor map_float(const Tensor& x, Tensor out, F f) {
  const float* in = x.f();
  float* y = out.f32->data();
  const int64_t count = x.elements();
  for (int64_t i = 0; i < count; ++i) y[i] = f(in[i]);
  return out;
}

Expected<Tensor> run_cast(const Tensor& x, Tensor out) {
  const int64_t count = x.elements();
  if (out.is_int()) {
    // torch truncates toward zero; we also saturate and send NaN to 0 so no value is undefined.
    for (int64_t i = 0; i < count; ++i) {
      const float v = (*x.f32)[i];
      int32_t r = 0;
      if (std::isnan(v))
        r = 0;
      else if (v >= 2147483647.0f)
        r = std::numeric_limits<int32_t>::max();
      else if (v <= -2147483648.0f)
        r = std::numeric_limits<int32_t>::min();
      else
        r = static_cast<int32_t>(v);
      (*out.i32)[i] = r;
    }
  } else {
    for (int64_t i = 0; i < count; ++i) (*out.f32)[i] = static_cast<float>((*x.i32)[i]);
  }
  return out;
}

Expected<Tensor> run_embedding(const Tensor& table, const Tensor& ids, Tensor out) {
  const int64_t vocab = table.shape[0];
  const int64_t hidden = table.shape[1];
  for (int64_t t = 0; t < ids.elements(); ++t) {
    const int32_t id = (*ids.i32)[t];
    if (id < 0 || id >= vocab)
      return invalid("token id " + std::to_string(id) + " at position " + std::to_string(t) +
                     " is out of range for vocab size " + std::to_string(vocab));
    std::copy_n(table.f() + id * hidden, hidden, out.f32->data() + t * hidden);  // [H]
  }
  return out;
}

Expected<Tensor> run_matmul(Context& context, const Tensor& a, const Tensor& b, Tensor out) {
  const size_t r = a.shape.size();
  const int64_t M = a.shape[r - 2], K = a.shape[r - 1], N = b.shape[r - 1];
  const int64_t batches = a.elements() / std::max<int64_t>(1, M * K);
  std::vector<float> bt(static_cast<size_t>(N * K));  // [N, K]: b transposed so linear's kernel applies
  for (int64_t batch = 0; batch < batches; ++batch) {
    kernels::permute(b.f() + batch * K * N, bt.data(), {K, N}, {1, 0});
    kernels::linear(*context.pool, a.f() + batch * M * K, bt.data(), nullptr, out.f32->data() + batch * M * N, M, N, K);
  }
  return out;
}

Expected<int64_t> read_position(const Tensor& pos) {
  const int32_t value = (*pos.i32)[0];
  if (value < 0) return invalid("position " + std::to_string(value) + " is negative");
  return static_cast<int64_t>(value);
}

kernels::RopeParams rope_params(const Node& node) {
  kernels::RopeParams params;
  params.theta = node.float_attr("theta", 10000.0);
  params.scaling = node.string_attr("scaling", "none");
  params.factor = node.float_attr("factor", 1.0);
  params.low_freq_factor = node.float_attr("low_freq_factor", 1.0);
  params.high_freq_factor = node.float_attr("high_freq_factor", 4.0);
  params.original_max_position = node.float_attr("original_max_position", 8192.0);
  return params;
}

Expected<Tensor> run_kv_append(Context& context, const Node& node, const Tensor& x, const Tensor& pos_tensor) {
  const std::string name = node.string_attr("state");
  AC_ASSIGN_OR_RETURN(Tensor cache, context.state(name));  // [L, KV, D]
  AC_ASSIGN_OR_RETURN(int64_t pos, read_position(pos_tensor));
  const int64_t rows = x.shape[0];
  const int64_t capacity = cache.shape[0];
  if (pos + rows > capacity)
    return invalid("state " + name + ": writing rows [" + std::to_string(pos) + ", " + std::to_string(pos + rows) +
                   ") runs past max_context " + std::to_string(capacity));
  const int64_t row = cache.elements() / std::max<int64_t>(1, capacity);
  std::copy_n(x.f(), rows * row, cache.f32->data() + pos * row);
  return cache;
}

Expected<Tensor> run_attention(Context& context, const Node& node, const std::vector<const Tensor*>& in, Tensor out) {
  const Tensor& q = *in[0];  // [T, NH, D]
  const Tensor& k = *in[1];  // [L, KV, D]
  const Tensor& v = *in[2];  // [L, KV, D]
  AC_ASSIGN_OR_RETURN(int64_t pos, read_position(*in[3]));
  kernels::AttentionShape shape;
  shape.T = q.shape[0];
  shape.NH = q.shape[1];
  shape.KV = k.shape[1];
  shape.D = q.shape[2];
  shape.pos = pos;
  shape.scale = node.float_attr("scale", 1.0);
  if (pos + shape.T > k.shape[0])
    return invalid("queries at positions [" + std::to_string(pos) + ", " + std::to_string(pos + shape.T) +
                   ") need more keys than the " + std::to_string(k.shape[0]) + " rows of the cache");
  kernels::attention(*context.pool, q.f(), k.f(), v.f(), out.f32->data(), shape);
  return out;
}

}  // namespace

Expected<Tensor> execute_node(Context& context, const Function& function, const Node& node,
                              const std::vector<Tensor>& values, const SymbolBindings& bindings) {
  std::vector<const Tensor*> in;
  for (ValueId id : node.operands) in.push_back(&values[id]);
  const TensorType& type = function.type(node.result);
  std::vector<int64_t> shape = bindings.resolve(type.shape);

  // Ops that produce no fresh storage.
  switch (node.op) {
    case OpKind::kWeight: return context.weight(node.string_attr("name"));
    case OpKind::kReshape:
    case OpKind::kView: return alias(*in[0], type.dtype, shape);
    case OpKind::kKvAppend: return run_kv_append(context, node, *in[0], *in[1]);
    case OpKind::kCast:  // between float dtypes values stay f32 (no f16/bf16 rounding): a relabel
      if (in[0]->is_int() == (type.dtype == DType::kI32)) return alias(*in[0], type.dtype, shape);
      break;
    default: break;
  }
  // Everything else is float-only except the layout ops, arithmetic, cast and argmax's output.
  const bool int_ok = node.op == OpKind::kTranspose || node.op == OpKind::kSlice || node.op == OpKind::kBroadcast ||
                      node.op == OpKind::kAdd || node.op == OpKind::kSub || node.op == OpKind::kMul ||
                      node.op == OpKind::kDiv || node.op == OpKind::kCast || node.op == OpKind::kEmbedding;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool index_operand = (node.op == OpKind::kEmbedding && i == 1) ||
                               ((node.op == OpKind::kRope || node.op == OpKind::kAttention) && i + 1 == in.size());
    if (in[i]->is_int() && !int_ok && !index_operand)
      return error(ErrorCode::kUnsupported, "the interpreter runs this op on float operands only");
  }
  if (node.op == OpKind::kEmbedding && in[0]->is_int())
    return error(ErrorCode::kUnsupported, "the interpreter gathers from float tables only");

  Tensor out = make_tensor(type.dtype, shape);
  switch (node.op) {
    case OpKind::kWeight:
    case OpKind::kReshape:
    case OpKind::kView:
    case OpKind::kKvAppend: break;  // handled above
    case OpKind::kEmbedding: return run_embedding(*in[0], *in[1], std::move(out));
    case OpKind::kLinear: {
      const int64_t K = in[0]->shape.back();
      const int64_t N = in[1]->shape[0];
      kernels::linear(*context.pool, in[0]->f(), in[1]->f(), in.size() == 3 ? in[2]->f() : nullptr, out.f32->data(),
                      in[0]->elements() / std::max<int64_t>(1, K), N, K);
      return out;
    }
    case OpKind::kMatmul: return run_matmul(context, *in[0], *in[1], std::move(out));
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv: return run_binary(node, *in[0], *in[1], std::move(out));
    // HF silu: x * sigmoid(x) in float32.
    case OpKind::kSilu: return map_float(*in[0], std::move(out), [](float x) { return x / (1.0f + std::exp(-x)); });
    case OpKind::kExp: return map_float(*in[0], std::move(out), [](float x) { return std::exp(x); });
    case OpKind::kNeg: return map_float(*in[0], std::move(out), [](float x) { return -x; });
    case OpKind::kCast: return run_cast(*in[0], std::move(out));
    case OpKind::kRmsNorm: {
      const int64_t D = in[0]->shape.back();
      kernels::rmsnorm(*context.pool, in[0]->f(), in[1]->f(), out.f32->data(),
                       in[0]->elements() / std::max<int64_t>(1, D), D, node.float_attr("eps"));
      return out;
    }
    case OpKind::kRope: {
      const Tensor& x = *in[0];  // [T, H, D]
      AC_ASSIGN_OR_RETURN(int64_t pos, read_position(*in[1]));
      const auto& table = context.rope_table(rope_params(node), x.shape[2], pos, x.shape[0]);
      kernels::rope(x.f(), out.f32->data(), x.shape[0], x.shape[1], x.shape[2], table);
      return out;
    }
    case OpKind::kTranspose: {
      std::vector<int64_t> perm;
      for (const Dim& d : node.dims_attr("perm")) perm.push_back(d.value);
      if (out.is_int())
        kernels::permute(in[0]->i(), out.i32->data(), in[0]->shape, perm);
      else
        kernels::permute(in[0]->f(), out.f32->data(), in[0]->shape, perm);
      return out;
    }
    case OpKind::kSlice: {
      const int64_t axis = normalize_axis(node.int_attr("axis"), in[0]->shape.size());
      const AxisSplit split = split_at(in[0]->shape, axis);
      const int64_t length = node.int_attr("length");
      int64_t start = node.int_attr("start");
      if (start < 0) start += split.n;
      if (start < 0 || start + length > split.n)
        return invalid("slice [" + std::to_string(node.int_attr("start")) + ", +" + std::to_string(length) +
                       ") is out of range of axis " + std::to_string(axis) + " (size " + std::to_string(split.n) + ")");
      if (out.is_int())
        kernels::slice(in[0]->i(), out.i32->data(), split.outer, split.n, split.inner, start, length);
      else
        kernels::slice(in[0]->f(), out.f32->data(), split.outer, split.n, split.inner, start, length);
      return out;
    }
    case OpKind::kBroadcast:
      if (out.is_int())
        kernels::broadcast_to(in[0]->i(), out.i32->data(), in[0]->shape, shape);
      else
        kernels::broadcast_to(in[0]->f(), out.f32->data(), in[0]->shape, shape);
      return out;
    case OpKind::kAttention: return run_attention(context, node, in, std::move(out));
    case OpKind::kSoftmax: {
      const AxisSplit split = split_at(in[0]->shape, normalize_axis(node.int_attr("axis", -1), in[0]->shape.size()));
      kernels::softmax(in[0]->f(), out.f32->data(), split.outer, split.n, split.inner);
      return out;
    }
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMean:
    case OpKind::kArgmax: {
      const AxisSplit split = split_at(in[0]->shape, normalize_axis(node.int_attr("axis", -1), in[0]->shape.size()));
      if (split.n == 0 && node.op != OpKind::kReduceSum) return invalid("reduces an empty axis");
      if (node.op == OpKind::kArgmax) {
        kernels::argmax(in[0]->f(), out.i32->data(), split.outer, split.n, split.inner);
        return out;
      }
      const auto reduction = node.op == OpKind::kReduceSum   ? kernels::Reduction::kSum
                             : node.op == OpKind::kReduceMax ? kernels::Reduction::kMax
                                                             : kernels::Reduction::kMean;
      kernels::reduce(in[0]->f(), out.f32->data(), split.outer, split.n, split.inner, reduction);
      return out;
    }
  }
  return error(ErrorCode::kInternal, "no interpreter rule for this op");
}

}  // namespace agentcompile::ir::exec
