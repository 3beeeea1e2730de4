// The reference interpreter's pointwise ops: binary arithmetic, comparisons and logic with numpy
// broadcasting, where (three-way broadcasting), unary math and casts between storages.
//
// Float math that is not a single IEEE operation (log, tanh, erf, pow, sigmoid, gelu, ...) is
// evaluated in double and rounded once, so the reference is correctly rounded for nearly every
// input; silu and exp keep the float formulas the interpreter always used. Integer arithmetic goes
// through uint32_t so overflow wraps like torch's int32 instead of being undefined.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>

#include "ir/interpreter_exec.h"

namespace agentcompile::ir::exec {

namespace {

Status invalid(const std::string& what) { return error(ErrorCode::kInvalidArgument, what); }

// Calls f(o, at) for every element o of out_shape, `at` holding the matching offset in each
// broadcast input.
template <size_t N, typename F>
void for_each_broadcast(const std::vector<int64_t>& out_shape, const std::array<const std::vector<int64_t>*, N>& in_shapes,
                        F f) {
  int64_t total = 1;
  for (int64_t size : out_shape) total *= size;
  bool same = true;
  for (const auto* shape : in_shapes) same = same && *shape == out_shape;
  if (same) {  // residual adds, gating multiplies
    parallel_elements(total, [&](int64_t begin, int64_t end) {
      std::array<int64_t, N> at{};
      for (int64_t o = begin; o < end; ++o) {
        at.fill(o);
        f(o, at);
      }
    });
    return;
  }
  std::array<std::vector<int64_t>, N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = broadcast_steps(*in_shapes[k], out_shape);
  const int rank = static_cast<int>(out_shape.size());
  parallel_elements(total, [&](int64_t begin, int64_t end) {
    // The chunk's first element: its index in out_shape and the matching offset in every input.
    std::vector<int64_t> index(rank, 0);
    std::array<int64_t, N> at{};
    for (int64_t d = rank - 1, rest = begin; d >= 0; --d) {
      index[d] = rest % out_shape[d];
      rest /= out_shape[d];
      for (size_t k = 0; k < N; ++k) at[k] += index[d] * steps[k][d];
    }
    for (int64_t o = begin; o < end; ++o) {
      f(o, at);
      for (int d = rank - 1; d >= 0; --d) {
        if (++index[d] < out_shape[d]) {
          for (size_t k = 0; k < N; ++k) at[k] += steps[k][d];
          break;
        }
        for (size_t k = 0; k < N; ++k) at[k] -= steps[k][d] * (out_shape[d] - 1);
        index[d] = 0;
      }
    }
  });
}

// out[o] = f(a[..], b[..]) with a and b of storage T and out of storage R.
template <typename R, typename T, typename F>
Tensor binary_map(const Tensor& a, const Tensor& b, Tensor out, F f) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  R* y = out.mutable_data<R>();
  for_each_broadcast<2>(out.shape, {&a.shape, &b.shape},
                        [&](int64_t o, const std::array<int64_t, 2>& at) { y[o] = f(pa[at[0]], pb[at[1]]); });
  return out;
}

template <typename T, typename F>
Tensor unary_map(const Tensor& x, Tensor out, F f) {
  const T* in = x.data<T>();
  T* y = out.mutable_data<T>();
  parallel_elements(x.elements(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = f(in[i]);
  });
  return out;
}

// f evaluated in double, rounded to float once.
template <typename F>
auto via_double(F f) {
  return [f](float x) { return static_cast<float>(f(static_cast<double>(x))); };
}

int32_t wrap(uint32_t value) { return static_cast<int32_t>(value); }  // modular since C++20
int32_t neg_i32(int32_t x) { return wrap(0u - static_cast<uint32_t>(x)); }

float nan_or(float p, float q, float otherwise) {
  if (std::isnan(p)) return p;
  if (std::isnan(q)) return q;
  return otherwise;
}

template <typename T>
Tensor compare(OpKind op, const Tensor& a, const Tensor& b, Tensor out) {
  switch (op) {
    case OpKind::kEq: return binary_map<int32_t, T>(a, b, std::move(out), [](T p, T q) -> int32_t { return p == q; });
    case OpKind::kNe: return binary_map<int32_t, T>(a, b, std::move(out), [](T p, T q) -> int32_t { return p != q; });
    case OpKind::kLt: return binary_map<int32_t, T>(a, b, std::move(out), [](T p, T q) -> int32_t { return p < q; });
    case OpKind::kLe: return binary_map<int32_t, T>(a, b, std::move(out), [](T p, T q) -> int32_t { return p <= q; });
    case OpKind::kGt: return binary_map<int32_t, T>(a, b, std::move(out), [](T p, T q) -> int32_t { return p > q; });
    default: return binary_map<int32_t, T>(a, b, std::move(out), [](T p, T q) -> int32_t { return p >= q; });
  }
}

Expected<Tensor> run_binary(OpKind op, const Tensor& a, const Tensor& b, Tensor out) {
  if (is_comparison(op))
    return with_storage(a.is_int(), [&](auto tag) { return compare<decltype(tag)>(op, a, b, std::move(out)); });
  using I = int32_t;
  if (op == OpKind::kLogicalAnd)
    return binary_map<I, I>(a, b, std::move(out), [](I p, I q) -> I { return p != 0 && q != 0; });
  if (op == OpKind::kLogicalOr)
    return binary_map<I, I>(a, b, std::move(out), [](I p, I q) -> I { return p != 0 || q != 0; });
  if (a.is_int()) {
    switch (op) {
      case OpKind::kAdd:
        return binary_map<I, I>(a, b, std::move(out), [](I p, I q) { return wrap(uint32_t(p) + uint32_t(q)); });
      case OpKind::kSub:
        return binary_map<I, I>(a, b, std::move(out), [](I p, I q) { return wrap(uint32_t(p) - uint32_t(q)); });
      case OpKind::kMul:
        return binary_map<I, I>(a, b, std::move(out), [](I p, I q) { return wrap(uint32_t(p) * uint32_t(q)); });
      case OpKind::kDiv:
        if (out.elements() > 0 && std::find(b.i32->begin(), b.i32->end(), 0) != b.i32->end())
          return invalid("integer division by zero");
        // Truncates toward zero; INT32_MIN / -1 wraps to INT32_MIN instead of trapping.
        return binary_map<I, I>(a, b, std::move(out), [](I p, I q) { return q == -1 ? neg_i32(p) : p / q; });
      default: break;
    }
  } else {
    switch (op) {
      case OpKind::kAdd: return binary_map<float, float>(a, b, std::move(out), [](float p, float q) { return p + q; });
      case OpKind::kSub: return binary_map<float, float>(a, b, std::move(out), [](float p, float q) { return p - q; });
      case OpKind::kMul: return binary_map<float, float>(a, b, std::move(out), [](float p, float q) { return p * q; });
      case OpKind::kDiv: return binary_map<float, float>(a, b, std::move(out), [](float p, float q) { return p / q; });
      case OpKind::kPow:
        return binary_map<float, float>(a, b, std::move(out), [](float p, float q) {
          return static_cast<float>(std::pow(static_cast<double>(p), static_cast<double>(q)));
        });
      case OpKind::kMaximum:
        return binary_map<float, float>(a, b, std::move(out),
                                        [](float p, float q) { return nan_or(p, q, p > q ? p : q); });
      case OpKind::kMinimum:
        return binary_map<float, float>(a, b, std::move(out),
                                        [](float p, float q) { return nan_or(p, q, p < q ? p : q); });
      default: break;
    }
  }
  return error(ErrorCode::kInternal, "no binary rule for " + std::string(a.is_int() ? "int" : "float") + " operands");
}

Tensor run_where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor out) {
  return with_storage(out.is_int(), [&](auto tag) {
    using T = decltype(tag);
    const int32_t* pc = cond.i();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* y = out.mutable_data<T>();
    for_each_broadcast<3>(out.shape, {&cond.shape, &a.shape, &b.shape}, [&](int64_t o, const std::array<int64_t, 3>& at) {
      y[o] = pc[at[0]] != 0 ? pa[at[1]] : pb[at[2]];
    });
    return out;
  });
}

Expected<Tensor> run_unary_int(OpKind op, const Tensor& x, Tensor out) {
  using I = int32_t;
  switch (op) {
    case OpKind::kNeg: return unary_map<I>(x, std::move(out), neg_i32);
    case OpKind::kAbs: return unary_map<I>(x, std::move(out), [](I v) { return v < 0 ? neg_i32(v) : v; });
    case OpKind::kSign: return unary_map<I>(x, std::move(out), [](I v) -> I { return (0 < v) - (v < 0); });
    case OpKind::kLogicalNot: return unary_map<I>(x, std::move(out), [](I v) -> I { return v == 0; });
    default: return error(ErrorCode::kInternal, "no integer rule for this unary op");
  }
}

Expected<Tensor> run_unary_float(const Node& node, const Tensor& x, Tensor out) {
  auto map = [&](auto f) { return unary_map<float>(x, std::move(out), f); };
  switch (node.op) {
    // HF silu: x * sigmoid(x) in float32.
    case OpKind::kSilu: return map([](float v) { return v / (1.0f + std::exp(-v)); });
    case OpKind::kExp: return map([](float v) { return std::exp(v); });
    case OpKind::kNeg: return map([](float v) { return -v; });
    case OpKind::kLog: return map(via_double([](double v) { return std::log(v); }));
    case OpKind::kLog1p: return map(via_double([](double v) { return std::log1p(v); }));
    case OpKind::kExpm1: return map(via_double([](double v) { return std::expm1(v); }));
    case OpKind::kSqrt: return map(via_double([](double v) { return std::sqrt(v); }));
    case OpKind::kRsqrt: return map(via_double([](double v) { return 1.0 / std::sqrt(v); }));
    case OpKind::kAbs: return map([](float v) { return std::fabs(v); });
    case OpKind::kTanh: return map(via_double([](double v) { return std::tanh(v); }));
    case OpKind::kSigmoid: return map(via_double([](double v) { return 1.0 / (1.0 + std::exp(-v)); }));
    case OpKind::kRelu: return map([](float v) { return std::isnan(v) || v > 0.0f ? v : 0.0f; });
    case OpKind::kErf: return map(via_double([](double v) { return std::erf(v); }));
    case OpKind::kSin: return map(via_double([](double v) { return std::sin(v); }));
    case OpKind::kCos: return map(via_double([](double v) { return std::cos(v); }));
    case OpKind::kReciprocal: return map([](float v) { return 1.0f / v; });
    case OpKind::kFloor: return map([](float v) { return std::floor(v); });
    case OpKind::kCeil: return map([](float v) { return std::ceil(v); });
    // Half to even, as torch.round: nearbyint in the default rounding mode, which nothing here changes.
    case OpKind::kRound: return map([](float v) { return std::nearbyint(v); });
    // torch's sign: (0 < x) - (x < 0), so NaN and -0 give 0.
    case OpKind::kSign: return map([](float v) { return static_cast<float>((0.0f < v) - (v < 0.0f)); });
    case OpKind::kGelu:
      if (node.string_attr("approximate", "none") == "tanh")
        return map(via_double([](double v) {
          const double inner = std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v);
          return 0.5 * v * (1.0 + std::tanh(inner));
        }));
      return map(via_double([](double v) { return 0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2)); }));
    case OpKind::kLeakyRelu: {
      const auto slope = static_cast<float>(node.float_attr("slope"));
      return map([slope](float v) { return v >= 0.0f ? v : slope * v; });
    }
    case OpKind::kClamp: {
      // Bounds in float, as torch converts its scalars; a NaN x stays NaN.
      const bool has_lo = node.has_attr("lo"), has_hi = node.has_attr("hi");
      const auto lo = static_cast<float>(node.float_attr("lo")), hi = static_cast<float>(node.float_attr("hi"));
      return map([=](float v) {
        if (has_lo && v < lo) v = lo;
        if (has_hi && v > hi) v = hi;
        return v;
      });
    }
    default: return error(ErrorCode::kInternal, "no float rule for this unary op");
  }
}

// Casts that change storage (or map i32 to bool); same-storage relabels never get here.
Tensor run_cast(const Tensor& x, Tensor out) {
  const int64_t count = x.elements();
  const bool to_bool = out.dtype == DType::kBool;
  if (!x.is_int() && out.is_int()) {
    const float* in = x.f();
    int32_t* y = out.i32->data();
    for (int64_t i = 0; i < count; ++i) {
      const float v = in[i];
      if (to_bool)
        y[i] = v != 0.0f;  // NaN is true, as bool(nan) is in torch
      else if (std::isnan(v))
        y[i] = 0;  // torch truncates toward zero; saturating and sending NaN to 0 leaves nothing undefined
      else if (v >= 2147483647.0f)
        y[i] = std::numeric_limits<int32_t>::max();
      else if (v <= -2147483648.0f)
        y[i] = std::numeric_limits<int32_t>::min();
      else
        y[i] = static_cast<int32_t>(v);
    }
  } else if (x.is_int() && !out.is_int()) {
    for (int64_t i = 0; i < count; ++i) (*out.f32)[i] = static_cast<float>((*x.i32)[i]);
  } else if (x.is_int()) {
    for (int64_t i = 0; i < count; ++i) (*out.i32)[i] = to_bool ? (*x.i32)[i] != 0 : (*x.i32)[i];
  } else {
    *out.f32 = *x.f32;
  }
  return out;
}

}  // namespace

Expected<Tensor> run_pointwise(const Node& node, const std::vector<const Tensor*>& in, Tensor out) {
  if (node.op == OpKind::kCast) return run_cast(*in[0], std::move(out));
  if (node.op == OpKind::kWhere) return run_where(*in[0], *in[1], *in[2], std::move(out));
  if (in.size() == 2) return run_binary(node.op, *in[0], *in[1], std::move(out));
  if (in[0]->is_int()) return run_unary_int(node.op, *in[0], std::move(out));
  return run_unary_float(node, *in[0], std::move(out));
}

}  // namespace agentcompile::ir::exec
