// Pass: activations (rule 5): SiLU and GELU from their formulas.
//
//   silu:        mul(X, sigmoid(X)) (either order), or div(X, add(1, exp(neg(X))))       -> silu(X)
//   gelu erf:    0.5 * X * (1 + erf(X * 0.70710678...)) (or erf(X / 1.41421356...))      -> gelu(X) {approximate = "none"}
//   gelu tanh:   0.5 * X * (1 + tanh(0.79788456... * (X + 0.044715 * X^3)))              -> gelu(X) {approximate = "tanh"}
//                (HF's NewGELU/GELUTanh and KernelBench's MinGPTNewGelu; X^3 as pow(X, 3) or X*X*X)
// Products are matched as multisets of factors: a tree of mul nodes whose inner nodes have no other
// reader is flattened, so any association and operand order matches ((0.5*X)*G, X*(0.5*G), ...).
// Constants match within 4 float32 ulps (torch writes them as Python doubles, a model may round them
// to float32). When X is a cast of a narrower float to f32 (torch's upcast around the activation),
// and every reader casts the result straight back, the activation is raised on the narrow value:
// cast(silu(x) -> f32), whose cast back then cancels in simplify (one rounding either way).
// Refuses: other GELU approximations (sigmoid(1.702 x)), constants off by more than the tolerance,
// inner values read elsewhere.
#include <algorithm>

#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

// The factors of the product that defines `value` (itself when it is no mul).
std::vector<ValueId> factors(const ir::Function& f, const UseDef& uses, ValueId value, bool root = true) {
  const ir::Node* mul = producer_of(f, value, OpKind::kMul);
  if (!mul || (!root && !single_use(uses, value))) return {value};
  std::vector<ValueId> out = factors(f, uses, mul->operands[0], false);
  const std::vector<ValueId> rest = factors(f, uses, mul->operands[1], false);
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

// Removes one factor for which `pick` holds; false when none does.
template <typename Pick>
bool take(std::vector<ValueId>& list, Pick pick) {
  auto it = std::find_if(list.begin(), list.end(), pick);
  if (it == list.end()) return false;
  list.erase(it);
  return true;
}

class Matcher {
 public:
  explicit Matcher(Rewriter& rw) : rw_(rw), f_(rw.old()), uses_(rw.old_uses()) {}

  ValueId silu(const ir::Node& node) {
    if (node.op == OpKind::kMul) {
      for (int side = 0; side < 2; ++side) {
        const ValueId x = node.operands[static_cast<size_t>(side)];
        const ValueId s = node.operands[static_cast<size_t>(1 - side)];
        const ir::Node* sigmoid = producer_of(f_, s, OpKind::kSigmoid);
        if (sigmoid && sigmoid->operands[0] == x && single_use(uses_, s)) return raise(node.result, x, OpKind::kSilu, {});
      }
    }
    if (node.op == OpKind::kDiv) {
      const ValueId x = node.operands[0];
      const auto sum = commuted(f_, node.operands[1], OpKind::kAdd, [&](ValueId v) { return producer_of(f_, v, OpKind::kExp) != nullptr; });
      if (!sum || !is_constant_near(f_, sum->second, 1.0, 0) || !single_use(uses_, node.operands[1]) || !single_use(uses_, sum->first))
        return ir::kNoValue;
      const ir::Node* neg = producer_of(f_, producer(f_, sum->first)->operands[0], OpKind::kNeg);
      if (neg && neg->operands[0] == x) return raise(node.result, x, OpKind::kSilu, {});
    }
    return ir::kNoValue;
  }

  ValueId gelu(const ir::Node& node) {
    if (node.op != OpKind::kMul) return ir::kNoValue;
    std::vector<ValueId> list = factors(f_, uses_, node.result);
    if (list.size() != 3 || !take(list, [&](ValueId v) { return is_constant_near(f_, v, 0.5); })) return ir::kNoValue;
    for (int side = 0; side < 2; ++side) {
      const ValueId x = list[static_cast<size_t>(side)];
      const ValueId g = list[static_cast<size_t>(1 - side)];
      const auto one_plus = commuted(f_, g, OpKind::kAdd, [&](ValueId v) { return is_constant_near(f_, v, 1.0, 0); });
      if (!one_plus || !single_use(uses_, g) || !single_use(uses_, one_plus->second)) continue;
      const ir::Node* inner = producer(f_, one_plus->second);
      if (!inner || !single_use(uses_, inner->operands[0])) continue;
      if (inner->op == OpKind::kErf && erf_argument(inner->operands[0], x)) return raise(node.result, x, OpKind::kGelu, {{"approximate", std::string("none")}});
      if (inner->op == OpKind::kTanh && tanh_argument(inner->operands[0], x)) return raise(node.result, x, OpKind::kGelu, {{"approximate", std::string("tanh")}});
    }
    return ir::kNoValue;
  }

 private:
  // X * 0.70710678 or X / 1.41421356.
  bool erf_argument(ValueId arg, ValueId x) const {
    if (const ir::Node* div = producer_of(f_, arg, OpKind::kDiv))
      return div->operands[0] == x && is_constant_near(f_, div->operands[1], 1.4142135623730951);
    std::vector<ValueId> list = factors(f_, uses_, arg);
    return list.size() == 2 && take(list, [&](ValueId v) { return v == x; }) && is_constant_near(f_, list[0], 0.7071067811865476);
  }

  // 0.79788456 * (X + 0.044715 * X^3).
  bool tanh_argument(ValueId arg, ValueId x) const {
    std::vector<ValueId> outer = factors(f_, uses_, arg);
    if (outer.size() != 2 || !take(outer, [&](ValueId v) { return is_constant_near(f_, v, 0.7978845608028654); })) return false;
    const auto sum = commuted(f_, outer[0], OpKind::kAdd, [&](ValueId v) { return v == x; });
    if (!sum || !single_use(uses_, outer[0])) return false;
    std::vector<ValueId> cubic = factors(f_, uses_, sum->second);
    if (!take(cubic, [&](ValueId v) { return is_constant_near(f_, v, 0.044715); })) return false;
    if (cubic.size() == 3) return std::count(cubic.begin(), cubic.end(), x) == 3;
    if (cubic.size() != 1) return false;
    const ir::Node* pow = producer_of(f_, cubic[0], OpKind::kPow);
    return pow && pow->operands[0] == x && is_constant_near(f_, pow->operands[1], 3.0, 0);
  }

  // The activation of X replacing `root`; on the narrow value when X is an upcast whose result every
  // reader casts straight back (so the f32 intermediate never mattered).
  ValueId raise(ValueId root, ValueId x, OpKind op, ir::Attrs attrs) {
    if (!ir::is_float(f_.type(x).dtype)) return ir::kNoValue;
    const ir::Node* cast = producer_of(f_, x, OpKind::kCast);
    if (cast && ir::is_float(f_.type(cast->operands[0]).dtype) && f_.type(x).dtype == ir::DType::kF32) {
      const ir::DType narrow = f_.type(cast->operands[0]).dtype;
      bool cast_back = !uses_.is_result[static_cast<size_t>(root)];
      for (int user : uses_.users[static_cast<size_t>(root)]) {
        const ir::Node& reader = f_.nodes[static_cast<size_t>(user)];
        cast_back = cast_back && reader.op == OpKind::kCast && f_.type(reader.result).dtype == narrow;
      }
      if (cast_back) return rw_.cast(rw_.emit(op, {rw_.map(cast->operands[0])}, std::move(attrs)), ir::DType::kF32);
    }
    return rw_.emit(op, {rw_.map(x)}, std::move(attrs));
  }

  Rewriter& rw_;
  const ir::Function& f_;
  const UseDef& uses_;
};

ValueId rewrite(Rewriter& rw, int index) {
  const ir::Node& node = rw.old().nodes[static_cast<size_t>(index)];
  Matcher matcher(rw);
  const ValueId silu = matcher.silu(node);
  return silu != ir::kNoValue ? silu : matcher.gelu(node);
}

}  // namespace

Expected<int> raise_activations(ir::Module& module) { return rewrite_nodes(module, "activations", rewrite); }

}  // namespace agentcompile::analysis::recognize
