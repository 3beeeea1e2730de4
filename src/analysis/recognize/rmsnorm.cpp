// Pass: rmsnorm (rule 3).
//
// Hugging Face's RMSNorm, as torch.export decomposes it (X is x, or x cast to f32):
//   P  = pow(X, 2) | mul(X, X)
//   M  = reduce_mean(P) {axis = last, keepdim = 1}
//   Rs = rsqrt(add(M, eps))                       (or the division form: N32 = div(X, sqrt(add(M, eps))))
//   N32 = mul(X, Rs)                              (either operand order)
//   R  = mul(W, [cast](N32))                      (either operand order; W weight-only, [D])
// and raises it by where the weight multiply happens:
//   Llama/Qwen: N32 is cast back to x's dtype, then multiplied by W        -> rmsnorm(x, W)
//   OLMo-2:     W = cast(w: dt -> f32) multiplies N32 in f32, x of dtype dt -> cast(rmsnorm(x, w) -> f32)
//               (the consumer's cast back to dt then cancels in simplify)
//   Gemma:      W is a weight-only f32 expression (1 + w)                   -> rmsnorm(X, W) in f32
//   f32 models: no casts                                                    -> rmsnorm(x, W)
// eps is read from the constant's value, written as the shortest decimal that float32 reads back the
// same (1e-06 whether the capture wrote the Python double or its float32 rounding), as the builders
// write it. Every intermediate must have no other reader (X itself is read twice). W is any
// weight-only expression; hoist_weight_expressions later turns a computed one into a parameter.
// Refuses: a norm over another axis, a mean without keepdim, an eps that is not one constant, a
// weight of another shape, and mixed dtypes it cannot express exactly (x bf16 normalized, cast to f16).
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

// The shortest decimal that reads back as the same float32 as `value`.
double shortest_f32_decimal(double value) {
  const float target = static_cast<float>(value);
  char buffer[64];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, static_cast<double>(target));
    if (std::strtof(buffer, nullptr) == target) return std::strtod(buffer, nullptr);
  }
  return value;
}

struct NormMatch {
  ValueId x = ir::kNoValue;       // X: the value normalized (f32 or the model dtype)
  double eps = 0;
};

// N32 = mul(X, rsqrt(add(M, eps))) or div(X, sqrt(add(M, eps))), M the mean of X^2 over the last axis.
std::optional<NormMatch> match_normalized(const ir::Function& f, const UseDef& uses, ValueId n32) {
  const ir::Node* node = producer(f, n32);
  if (!node || node->operands.size() != 2) return std::nullopt;
  ValueId x = ir::kNoValue, root = ir::kNoValue;
  if (node->op == OpKind::kMul) {
    for (int side = 0; side < 2 && x == ir::kNoValue; ++side) {
      const ValueId r = node->operands[static_cast<size_t>(1 - side)];
      if (const ir::Node* rsqrt = producer_of(f, r, OpKind::kRsqrt); rsqrt && single_use(uses, r)) {
        x = node->operands[static_cast<size_t>(side)];
        root = rsqrt->operands[0];
      }
    }
  } else if (node->op == OpKind::kDiv) {
    if (const ir::Node* sqrt = producer_of(f, node->operands[1], OpKind::kSqrt); sqrt && single_use(uses, node->operands[1])) {
      x = node->operands[0];
      root = sqrt->operands[0];
    }
  }
  if (x == ir::kNoValue || !single_use(uses, root) || !ir::is_float(f.type(x).dtype)) return std::nullopt;
  const auto sum = commuted(f, root, OpKind::kAdd, [&](ValueId v) { return producer_of(f, v, OpKind::kReduceMean) != nullptr; });
  if (!sum) return std::nullopt;
  const auto eps = splat_constant(f, sum->second);
  const ValueId mean_value = sum->first;
  const ir::Node* mean = producer(f, mean_value);
  const size_t rank = f.type(x).shape.size();
  if (!eps || rank == 0 || !single_use(uses, mean_value) || mean->int_attr("keepdim") != 1 ||
      normalize_axis(mean->int_attr("axis", -1), rank) != static_cast<int64_t>(rank) - 1)
    return std::nullopt;
  const ValueId square = mean->operands[0];
  const ir::Node* sq = producer(f, square);
  if (!sq || !single_use(uses, square)) return std::nullopt;
  const bool is_square = (sq->op == OpKind::kPow && sq->operands[0] == x && is_constant_near(f, sq->operands[1], 2.0, 0)) ||
                         (sq->op == OpKind::kMul && sq->operands[0] == x && sq->operands[1] == x);
  if (!is_square) return std::nullopt;
  return NormMatch{x, shortest_f32_decimal(*eps)};
}

// The float value that `value` is a cast of (kNoValue when it is no float-to-float cast).
ValueId cast_source(const ir::Function& f, ValueId value) {
  const ir::Node* cast = producer_of(f, value, OpKind::kCast);
  if (!cast || !ir::is_float(f.type(cast->operands[0]).dtype) || !ir::is_float(f.type(value).dtype)) return ir::kNoValue;
  return cast->operands[0];
}

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op != OpKind::kMul) return ir::kNoValue;
  const auto& weight_only = rw.old_weight_only();
  for (int side = 0; side < 2; ++side) {
    const ValueId w = node.operands[static_cast<size_t>(side)];
    const ValueId n = node.operands[static_cast<size_t>(1 - side)];
    const ir::TensorType& wt = f.type(w);
    const ir::TensorType& nt = f.type(n);
    if (!weight_only[static_cast<size_t>(w)] || weight_only[static_cast<size_t>(n)] || wt.shape.size() != 1 ||
        nt.shape.empty() || wt.shape[0] != nt.shape.back() || !single_use(rw.old_uses(), n))
      continue;
    const ValueId cast_back = cast_source(f, n);
    const ValueId n32 = cast_back != ir::kNoValue ? cast_back : n;
    if (cast_back != ir::kNoValue && !single_use(rw.old_uses(), n32)) continue;
    auto m = match_normalized(f, rw.old_uses(), n32);
    if (!m) continue;
    const ir::Attrs attrs{{"eps", m->eps}};
    const ValueId x0 = cast_source(f, m->x);
    if (cast_back != ir::kNoValue) {
      // Llama form: normalized, cast back to x's dtype, multiplied by W in that dtype.
      if (x0 == ir::kNoValue || f.type(x0).dtype != nt.dtype) continue;
      return rw.emit(OpKind::kRmsNorm, {rw.map(x0), rw.map(w)}, attrs);
    }
    const ValueId w0 = cast_source(f, w);
    if (x0 != ir::kNoValue && w0 != ir::kNoValue && f.type(w0).dtype == f.type(x0).dtype) {
      // OLMo form: the weight multiplies in f32; one rounding to x's dtype either way.
      return rw.cast(rw.emit(OpKind::kRmsNorm, {rw.map(x0), rw.map(w0)}, attrs), nt.dtype);
    }
    return rw.emit(OpKind::kRmsNorm, {rw.map(m->x), rw.map(w)}, attrs);
  }
  return ir::kNoValue;
}

}  // namespace

Expected<int> raise_rmsnorm(ir::Module& module) { return rewrite_nodes(module, "rmsnorm", rewrite); }

}  // namespace agentcompile::analysis::recognize
