// One IR node at a time: operand tensors in, result tensor out, following ir/ops.h exactly.
//
// Result shapes come from the node's IR type resolved with this call's T and L; the planner checked
// every declared type against inference, so operand shapes agree with their types and the kernels'
// index arithmetic stays in bounds. What types cannot promise (token ids, indices, positions, slices
// of T, integer constants) is checked here against the actual values. Pointwise ops are handed to
// interpreter_pointwise.cpp, data movement to interpreter_layout.cpp; sources, side effects and the
// numeric kernels are dispatched here.
#include "ir/interpreter_exec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/random.cuh"  // random_uniform: the kernels' own definition
#include "support/host_limits.h"
#include "support/large_buffers.h"

namespace agentcompile::ir::exec {

int64_t Tensor::elements() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

Expected<Tensor> make_tensor(DType dtype, std::vector<int64_t> shape, uint64_t held) {
  std::string what = std::string("a ") + (int_storage(dtype) ? "i32[" : "f32[");  // how the values are held
  for (size_t i = 0; i < shape.size(); ++i) what += (i ? ", " : "") + std::to_string(shape[i]);
  what += "] tensor";
  uint64_t bytes = 0;  // every value is held in 4 bytes (f32 or i32)
  if (!support::checked_bytes(shape, 4, bytes))
    return error(ErrorCode::kResourceExhausted, what + " has more bytes than a 64-bit size can count");
  AC_TRY(support::check_host_allocation(bytes, what, held));
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  const auto count = static_cast<size_t>(tensor.elements());
  if (int_storage(dtype))
    tensor.i32 = std::make_shared<std::vector<int32_t>>(support::zeroed_vector<int32_t>(count));
  else
    tensor.f32 = std::make_shared<std::vector<float>>(support::zeroed_vector<float>(count));
  return tensor;
}

Status check_indices(const Tensor& indices, int64_t size, const std::string& what, const std::string& range) {
  const int32_t* values = indices.i();
  for (int64_t i = 0; i < indices.elements(); ++i)
    if (values[i] < 0 || values[i] >= size)
      return error(ErrorCode::kInvalidArgument, what + " " + std::to_string(values[i]) + " at position " +
                                                    std::to_string(i) + " is out of range for " + range);
  return Status::ok();
}

namespace {

Status invalid(const std::string& what) { return error(ErrorCode::kInvalidArgument, what); }

// The same storage under another dtype/shape (views, reshapes, same-storage casts).
Tensor alias(const Tensor& x, DType dtype, std::vector<int64_t> shape) {
  Tensor out = x;
  out.dtype = dtype;
  out.shape = std::move(shape);
  return out;
}

// The product of all dims but the last: the rows of a row-wise op (also when the last dim is 0).
int64_t leading_rows(const std::vector<int64_t>& shape) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return rows;
}

// A number an integer tensor must hold exactly: whole, finite and within i32's range.
Expected<int32_t> whole_i32(double value, const std::string& what) {
  if (!(value >= -2147483648.0 && value <= 2147483647.0) || value != std::trunc(value))
    return invalid(what + " " + attr_to_string(value) + " is not a whole number within i32's range");
  return static_cast<int32_t>(value);
}

Expected<Tensor> run_constant(const Node& node, Tensor out) {
  const bool dense = node.has_attr("values");
  const FloatList values = dense ? node.floats_attr("values") : FloatList{node.float_attr("value")};
  const int64_t count = out.elements();
  if (dense && static_cast<int64_t>(values.size()) != count)
    return invalid("attr values holds " + std::to_string(values.size()) + " numbers for " + std::to_string(count) +
                   " elements");
  for (int64_t i = 0; i < count; ++i) {
    const double value = values[dense ? i : 0];
    if (!out.is_int()) {
      (*out.f32)[i] = static_cast<float>(value);
      continue;
    }
    AC_ASSIGN_OR_RETURN(int32_t whole, whole_i32(value, "element " + std::to_string(i)));
    if (out.dtype == DType::kBool && whole != 0 && whole != 1)
      return invalid("bool element " + std::to_string(i) + " is " + std::to_string(whole) + ", not 0 or 1");
    (*out.i32)[i] = whole;
  }
  return out;
}

// torch computes a float arange in double and rounds each value; an i32 one is exact.
Expected<Tensor> run_arange(const Node& node, Tensor out) {
  const double start = node.float_attr("start", 0.0);
  const double step = node.float_attr("step", 1.0);
  const int64_t count = out.elements();
  if (!out.is_int()) {
    for (int64_t i = 0; i < count; ++i) (*out.f32)[i] = static_cast<float>(start + static_cast<double>(i) * step);
    return out;
  }
  AC_ASSIGN_OR_RETURN(int32_t first, whole_i32(start, "start"));
  AC_ASSIGN_OR_RETURN(int32_t stride, whole_i32(step, "step"));
  for (int64_t i = 0; i < count; ++i) {
    // Stops at the first value past i32, so i * stride stays far inside int64.
    const int64_t value = first + i * stride;
    if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max())
      return invalid("element " + std::to_string(i) + " (" + std::to_string(value) + ") overflows i32");
    (*out.i32)[i] = static_cast<int32_t>(value);
  }
  return out;
}

// random_uniform: element i is ac::random_uniform(seed, i), as every kernel computes it.
Expected<Tensor> run_random_uniform(const Node& node, Tensor out) {
  const auto seed = static_cast<unsigned long long>(node.int_attr("seed"));
  const int64_t count = out.elements();
  for (int64_t i = 0; i < count; ++i) (*out.f32)[i] = ac::random_uniform(seed, static_cast<unsigned long long>(i));
  return out;
}

Expected<int64_t> read_position(const Tensor& pos, int64_t index = 0) {
  const int32_t value = (*pos.i32)[static_cast<size_t>(index)];
  if (value < 0) return invalid("position " + std::to_string(value) + " is negative");
  return static_cast<int64_t>(value);
}

// The per-row form (pos i32[T], base i32[T]): row t's cache row is base[t] + pos[t]. Every row is checked
// before anything is written or read.
Expected<std::vector<int64_t>> read_cache_rows(const Tensor& pos, const Tensor& base, int64_t capacity, const std::string& what) {
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < pos.elements(); ++t) {
    const int64_t p = pos.i()[t], b = base.i()[t];
    if (p < 0 || b < 0)
      return invalid("row " + std::to_string(t) + ": position " + std::to_string(p) + " and base " + std::to_string(b) +
                     " must not be negative");
    if (b + p >= capacity)
      return invalid(what + ": row " + std::to_string(t) + " at base " + std::to_string(b) + " + position " +
                     std::to_string(p) + " runs past the " + std::to_string(capacity) + " rows of the cache");
    rows.push_back(b + p);
  }
  return rows;
}

Expected<Tensor> run_kv_append(Context& context, const Node& node, const std::vector<const Tensor*>& in) {
  const Tensor& x = *in[0];
  const std::string name = node.string_attr("state");
  AC_ASSIGN_OR_RETURN(Tensor cache, context.state(name));  // [L, KV, D]
  const int64_t rows = x.shape[0];
  const int64_t capacity = cache.shape[0];
  const int64_t row = cache.elements() / std::max<int64_t>(1, capacity);
  if (in.size() == 3) {
    AC_ASSIGN_OR_RETURN(std::vector<int64_t> targets, read_cache_rows(*in[1], *in[2], capacity, "state " + name));
    for (int64_t t = 0; t < rows; ++t) std::copy_n(x.f() + t * row, row, cache.f32->data() + targets[t] * row);
    return cache;
  }
  AC_ASSIGN_OR_RETURN(int64_t pos, read_position(*in[1]));
  if (pos + rows > capacity)
    return invalid("state " + name + ": writing rows [" + std::to_string(pos) + ", " + std::to_string(pos + rows) +
                   ") runs past max_context " + std::to_string(capacity));
  std::copy_n(x.f(), rows * row, cache.f32->data() + pos * row);
  return cache;
}

// Every index is checked before anything is written, so a failed call leaves the state as it was.
// Repeated indices write in order (the last one stays).
Expected<Tensor> run_index_copy(Context& context, const Node& node, const Tensor& src, const Tensor& index) {
  const std::string name = node.string_attr("state");
  AC_ASSIGN_OR_RETURN(Tensor state, context.state(name));  // [L, KV, D]
  const int64_t axis = normalize_axis(node.int_attr("axis"), state.shape.size());
  const AxisSplit split = split_at(state.shape, axis);
  AC_TRY(check_indices(index, split.n, "index",
                       "state " + name + " (axis " + std::to_string(axis) + " of size " + std::to_string(split.n) + ")"));
  std::vector<float> copy;  // src may be this very state (its own earlier result): read a copy then
  const float* from = src.f();
  if (src.f32 == state.f32) {
    copy = *src.f32;
    from = copy.data();
  }
  const int64_t m = index.elements();
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t j = 0; j < m; ++j)
      std::copy_n(from + (o * m + j) * split.inner, split.inner,
                  state.f32->data() + (o * split.n + index.i()[j]) * split.inner);
  return state;
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

Expected<Tensor> run_rope(Context& context, const Node& node, const Tensor& x, const Tensor& pos_tensor, Tensor out) {
  const int64_t T = x.shape[0], H = x.shape[1], D = x.shape[2];  // x [T, H, D]
  std::vector<float> inv_freq;
  if (node.has_attr("inv_freq"))
    for (double f : node.floats_attr("inv_freq")) inv_freq.push_back(static_cast<float>(f));
  else
    inv_freq = kernels::rope_inv_freq(rope_params(node), D);
  if (static_cast<int64_t>(inv_freq.size()) != D / 2)
    return invalid("the inverse frequencies hold " + std::to_string(inv_freq.size()) + " values, head dim " +
                   std::to_string(D) + " needs " + std::to_string(D / 2));
  const auto scale = static_cast<float>(node.float_attr("scale", 1.0));
  if (!pos_tensor.shape.empty()) {
    // Per-row positions: each row is rotated as a one-token call at its own position would rotate it.
    for (int64_t t = 0; t < T; ++t) {
      AC_ASSIGN_OR_RETURN(int64_t row_pos, read_position(pos_tensor, t));
      kernels::rope(x.f() + t * H * D, out.f32->data() + t * H * D, 1, H, D, kernels::rope_table(inv_freq, row_pos, 1, scale));
    }
    return out;
  }
  AC_ASSIGN_OR_RETURN(int64_t pos, read_position(pos_tensor));
  kernels::rope(x.f(), out.f32->data(), T, H, D, context.rope_table(inv_freq, scale, pos, T));
  return out;
}

Expected<Tensor> run_attention(Context& context, const Node& node, const std::vector<const Tensor*>& in, Tensor out) {
  const Tensor& q = *in[0];  // [T, NH, D]
  const Tensor& k = *in[1];  // [L, KV, D]
  const Tensor& v = *in[2];  // [L, KV, D]
  kernels::AttentionShape shape;
  shape.T = q.shape[0];
  shape.NH = q.shape[1];
  shape.KV = k.shape[1];
  shape.D = q.shape[2];
  shape.window = node.int_attr("window", 0);
  shape.scale = node.float_attr("scale", 1.0);
  if (in.size() == 5) {
    // Per-row form: query row t is a one-token call over its own sequence's rows [base[t], base[t] + pos[t]].
    AC_ASSIGN_OR_RETURN(std::vector<int64_t> current, read_cache_rows(*in[3], *in[4], k.shape[0], "attention"));
    const int64_t T = shape.T, q_row = shape.NH * shape.D, kv_row = shape.KV * shape.D;
    shape.T = 1;
    for (int64_t t = 0; t < T; ++t) {
      shape.pos = in[3]->i()[t];
      const int64_t first = current[t] - shape.pos;  // base[t]
      kernels::attention(*context.pool, q.f() + t * q_row, k.f() + first * kv_row, v.f() + first * kv_row,
                         out.f32->data() + t * q_row, shape);
    }
    return out;
  }
  AC_ASSIGN_OR_RETURN(int64_t pos, read_position(*in[3]));
  shape.pos = pos;
  if (pos + shape.T > k.shape[0])
    return invalid("queries at positions [" + std::to_string(pos) + ", " + std::to_string(pos + shape.T) +
                   ") need more keys than the " + std::to_string(k.shape[0]) + " rows of the cache");
  kernels::attention(*context.pool, q.f(), k.f(), v.f(), out.f32->data(), shape);
  return out;
}

Expected<Tensor> run_sdpa(Context& context, const Node& node, const std::vector<const Tensor*>& in, Tensor out) {
  const Tensor& q = *in[0];  // [B..., NH, S, D]
  const Tensor& k = *in[1];  // [B..., KV, S2, D]
  const Tensor& v = *in[2];  // [B..., KV, S2, Dv]
  const size_t r = q.shape.size();
  kernels::SdpaShape shape;
  shape.batch.assign(q.shape.begin(), q.shape.end() - 3);
  shape.NH = q.shape[r - 3];
  shape.S = q.shape[r - 2];
  shape.D = q.shape[r - 1];
  shape.KV = k.shape[r - 3];
  shape.S2 = k.shape[r - 2];
  shape.Dv = v.shape[r - 1];
  shape.scale = node.float_attr("scale", 1.0);
  shape.causal = node.int_attr("causal", 0) != 0;
  kernels::SdpaMask mask;
  if (in.size() == 4) {
    std::vector<int64_t> scores = q.shape;  // [B..., NH, S, S2]
    scores[r - 1] = shape.S2;
    mask.steps = broadcast_steps(in[3]->shape, scores);
    if (in[3]->is_int())
      mask.keep = in[3]->i();
    else
      mask.bias = in[3]->f();
  }
  kernels::sdpa(*context.pool, q.f(), k.f(), v.f(), out.f32->data(), shape, mask);
  return out;
}

Expected<Tensor> run_axis_op(const Node& node, const Tensor& x, Tensor out) {
  const int64_t axis = normalize_axis(node.int_attr("axis", -1), x.shape.size());
  const AxisSplit s = split_at(x.shape, axis);
  switch (node.op) {
    case OpKind::kSoftmax: kernels::softmax(x.f(), out.f32->data(), s.outer, s.n, s.inner); return out;
    case OpKind::kLogSoftmax: kernels::log_softmax(x.f(), out.f32->data(), s.outer, s.n, s.inner); return out;
    case OpKind::kCumsum:
    case OpKind::kCumprod: {
      const bool product = node.op == OpKind::kCumprod;
      if (x.is_int())
        kernels::cumulative(x.i(), out.i32->data(), s.outer, s.n, s.inner, product);
      else
        kernels::cumulative(x.f(), out.f32->data(), s.outer, s.n, s.inner, product);
      return out;
    }
    default: break;
  }
  if (s.n == 0 && node.op != OpKind::kReduceSum && node.op != OpKind::kReduceProd)
    return invalid("reduces an empty axis");
  if (node.op == OpKind::kArgmax || node.op == OpKind::kArgmin) {
    const bool max = node.op == OpKind::kArgmax;
    with_storage(x.is_int(), [&](auto tag) {
      using T = decltype(tag);
      if (max)
        kernels::argmax(x.data<T>(), out.i32->data(), s.outer, s.n, s.inner);
      else
        kernels::argmin(x.data<T>(), out.i32->data(), s.outer, s.n, s.inner);
    });
    return out;
  }
  kernels::Reduction reduction = kernels::Reduction::kSum;
  switch (node.op) {
    case OpKind::kReduceMax: reduction = kernels::Reduction::kMax; break;
    case OpKind::kReduceMin: reduction = kernels::Reduction::kMin; break;
    case OpKind::kReduceMean: reduction = kernels::Reduction::kMean; break;
    case OpKind::kReduceProd: reduction = kernels::Reduction::kProd; break;
    default: break;
  }
  if (x.is_int())
    kernels::reduce(x.i(), out.i32->data(), s.outer, s.n, s.inner, reduction);
  else
    kernels::reduce(x.f(), out.f32->data(), s.outer, s.n, s.inner, reduction);
  return out;
}

// Operands that float-only kernels read as f32 but the type rules leave free.
bool needs_float(OpKind op, size_t operand) {
  switch (op) {
    case OpKind::kLinear:
    case OpKind::kMatmul:
    case OpKind::kRmsNorm:
    case OpKind::kLayerNorm: return true;
    case OpKind::kRope: return operand == 0;
    case OpKind::kAttention: return operand < 3;
    default: return false;
  }
}

// all_reduce / all_gather through the rank's group. A gather joins the ranks' [outer, n, inner] blocks
// along the axis: out[o, r * n + i, :] = rank r's x[o, i, :].
Expected<Tensor> run_collective(Context& context, const Node& node, const Tensor& x, Tensor out) {
  const int64_t ranks = node.int_attr("ranks");
  const int group = context.collective ? context.collective->ranks() : 1;
  if (ranks != group)
    return error(ErrorCode::kMismatch, "the node spans " + std::to_string(ranks) + " ranks but the interpreter's group has " +
                                           std::to_string(group));
  std::vector<float> mine(x.f(), x.f() + x.elements());
  if (node.op == OpKind::kAllReduce) {
    if (context.collective) AC_TRY(context.collective->all_reduce_sum(mine));
    std::copy(mine.begin(), mine.end(), out.f32->begin());
    return out;
  }
  std::vector<float> all = mine;
  if (context.collective) AC_TRY(context.collective->all_gather(mine, all));
  const AxisSplit s = split_at(x.shape, normalize_axis(node.int_attr("axis", -1), x.shape.size()));
  const int64_t block = s.n * s.inner;
  float* dst = out.f32->data();
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t r = 0; r < ranks; ++r)
      std::copy_n(all.data() + (r * s.outer + o) * block, block, dst + (o * ranks + r) * block);
  return out;
}

}  // namespace

namespace {
thread_local ThreadPool* loop_pool = nullptr;
constexpr int64_t kElementsPerChunk = int64_t{1} << 18;
}  // namespace

void parallel_elements(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t cost) {
  cost = std::max<int64_t>(cost, 1);
  if (!loop_pool || loop_pool->size() < 2 || count < 2 || count * cost < 4 * kElementsPerChunk) {
    if (count > 0) fn(0, count);
    return;
  }
  ThreadPool* pool = loop_pool;
  loop_pool = nullptr;  // a chunk that reaches parallel_elements again runs inline (the pool is not reentrant)
  pool->parallel_for(count, std::max<int64_t>(1, kElementsPerChunk / cost), fn);
  loop_pool = pool;
}

LoopPoolScope::LoopPoolScope(ThreadPool* pool) : previous_(loop_pool) { loop_pool = pool; }
LoopPoolScope::~LoopPoolScope() { loop_pool = previous_; }

Expected<Tensor> execute_node(Context& context, const Function& function, const Node& node,
                              const std::vector<Tensor>& values, const SymbolBindings& bindings) {
  LoopPoolScope scope(context.pool);
  std::vector<const Tensor*> in;
  for (ValueId id : node.operands) in.push_back(&values[id]);
  const TensorType& type = function.type(node.result);
  std::vector<int64_t> shape = bindings.resolve(type.shape);

  // Ops that produce no fresh storage.
  switch (node.op) {
    case OpKind::kWeight: return context.weight(node.string_attr("name"));
    case OpKind::kReshape:
    case OpKind::kView: return alias(*in[0], type.dtype, shape);
    case OpKind::kKvAppend: return run_kv_append(context, node, in);
    case OpKind::kIndexCopy: return run_index_copy(context, node, *in[0], *in[1]);
    case OpKind::kCast:
      // Between float dtypes values stay f32 (no f16/bf16 rounding), and bool -> i32 keeps its 0/1:
      // relabels. Only i32 -> bool must map every nonzero value to 1.
      if (in[0]->is_int() == int_storage(type.dtype) && !(in[0]->dtype == DType::kI32 && type.dtype == DType::kBool))
        return alias(*in[0], type.dtype, shape);
      break;
    default: break;
  }
  for (size_t i = 0; i < in.size(); ++i)
    if (needs_float(node.op, i) && in[i]->is_int())
      return error(ErrorCode::kUnsupported, "the interpreter runs " + std::string(op_name(node.op)) +
                                                " on float operands only; operand " + std::to_string(i) + " is " +
                                                std::string(dtype_name(in[i]->dtype)));

  AC_ASSIGN_OR_RETURN(Tensor out, make_tensor(type.dtype, shape, context.held_bytes));
  const OpClass op_class = op_info(node.op).op_class;
  if (op_class == OpClass::kPointwise) return run_pointwise(node, in, std::move(out));
  if (op_class == OpClass::kLayout || op_class == OpClass::kGather) return run_layout(node, in, std::move(out));
  switch (node.op) {
    case OpKind::kConstant: return run_constant(node, std::move(out));
    case OpKind::kArange: return run_arange(node, std::move(out));
    case OpKind::kRandomUniform: return run_random_uniform(node, std::move(out));
    case OpKind::kLinear: {
      const int64_t K = in[0]->shape.back();
      const int64_t N = in[1]->shape[0];
      kernels::linear(*context.pool, in[0]->f(), in[1]->f(), in.size() == 3 ? in[2]->f() : nullptr, out.f32->data(),
                      leading_rows(in[0]->shape), N, K);
      return out;
    }
    case OpKind::kMatmul: {
      const std::vector<int64_t>& a = in[0]->shape;  // [B..., M, K]; b [B..., K, N]
      const size_t r = a.size();
      int64_t batches = 1;
      for (size_t d = 0; d + 2 < r; ++d) batches *= a[d];
      kernels::matmul(*context.pool, in[0]->f(), in[1]->f(), out.f32->data(), batches, a[r - 2], in[1]->shape[r - 1],
                      a[r - 1]);
      return out;
    }
    case OpKind::kRmsNorm:
      kernels::rmsnorm(*context.pool, in[0]->f(), in[1]->f(), out.f32->data(), leading_rows(in[0]->shape),
                       in[0]->shape.back(), node.float_attr("eps"));
      return out;
    case OpKind::kLayerNorm:
      kernels::layer_norm(*context.pool, in[0]->f(), in.size() > 1 ? in[1]->f() : nullptr,
                          in.size() > 2 ? in[2]->f() : nullptr, out.f32->data(), leading_rows(in[0]->shape),
                          in[0]->shape.back(), node.float_attr("eps"));
      return out;
    case OpKind::kRope: return run_rope(context, node, *in[0], *in[1], std::move(out));
    case OpKind::kAttention: return run_attention(context, node, in, std::move(out));
    case OpKind::kSdpa: return run_sdpa(context, node, in, std::move(out));
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceMean:
    case OpKind::kReduceProd:
    case OpKind::kArgmax:
    case OpKind::kArgmin:
    case OpKind::kCumsum:
    case OpKind::kCumprod: return run_axis_op(node, *in[0], std::move(out));
    case OpKind::kAllReduce:
    case OpKind::kAllGather: return run_collective(context, node, *in[0], std::move(out));
    default: break;
  }
  return error(ErrorCode::kInternal, "no interpreter rule for this op");
}

}  // namespace agentcompile::ir::exec
