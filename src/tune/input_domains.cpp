// Input domains for validation cases (see input_domains.h).
#include "tune/input_domains.h"

#include <algorithm>
#include <cmath>

namespace agentcompile::tune {

namespace {

using ir::OpKind;

int64_t normalize(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// The domain operand `k` of `node` needs.
InputDomain domain_of(const ir::Function& f, const ir::Node& node, size_t k) {
  auto index = [&](Domain d, const ir::Shape& shape, int64_t axis) {
    const ir::Dim& dim = shape[static_cast<size_t>(normalize(axis, shape.size()))];
    return InputDomain{d, dim.is_static() ? static_cast<int32_t>(std::min<int64_t>(dim.value, INT32_MAX)) : 1};
  };
  switch (node.op) {
    case OpKind::kEmbedding:
      if (k == 1) return index(Domain::kIndex, f.type(node.operands[0]).shape, 0);
      break;
    case OpKind::kIndexSelect:
    case OpKind::kGather:
      if (k == 1) return index(Domain::kIndex, f.type(node.operands[0]).shape, node.int_attr("axis"));
      break;
    case OpKind::kIndexCopy:
      if (k == 1) return index(Domain::kDistinctIndex, f.type(node.result).shape, node.int_attr("axis"));
      break;
    // decode_batch's per-row form (ir/decode_batch.h): each row's position inside its slot, each row's
    // slot's first cache row.
    case OpKind::kRope:
      if (k == 1 && !f.type(node.operands[1]).shape.empty()) return {Domain::kRowPosition, 0};
      break;
    case OpKind::kKvAppend:
      if (node.operands.size() == 3 && k == 1) return {Domain::kRowPosition, 0};
      if (node.operands.size() == 3 && k == 2) return {Domain::kRowBase, 0};
      break;
    case OpKind::kAttention:
      if (node.operands.size() == 5 && k == 3) return {Domain::kRowPosition, 0};
      if (node.operands.size() == 5 && k == 4) return {Domain::kRowBase, 0};
      break;
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kLog1p: return {Domain::kPositive, 0};
    case OpKind::kPow:
      if (k == 0) return {Domain::kPositive, 0};
      break;
    case OpKind::kReciprocal: return {Domain::kNonzero, 0};
    case OpKind::kDiv:
      if (k == 1) return {Domain::kNonzero, 0};
      break;
    case OpKind::kExp:
    case OpKind::kExpm1: return {Domain::kBounded, 0};
    case OpKind::kCumprod:
    case OpKind::kReduceProd: return {Domain::kProduct, 0};
    default: break;
  }
  return {};
}

// The value of a one-value constant, if `value` is one.
bool constant_value(const ir::Function& f, ir::ValueId value, double& out) {
  const int producer = f.value(value).producer;
  if (producer < 0) return false;
  const ir::Node& node = f.nodes[static_cast<size_t>(producer)];
  if (node.op != OpKind::kConstant || !node.has_attr("value")) return false;
  out = node.float_attr("value");
  return true;
}

// Whether operand k of `node` passes a positive value on as a positive one of the same order: a
// cast, an add of a constant >= 0, a product or quotient with a constant > 0 (an epsilon added
// before a square root, a scale).
bool keeps_sign(const ir::Function& f, const ir::Node& node, size_t k) {
  if (node.op == OpKind::kCast) return ir::is_float(f.type(node.result).dtype);
  if (node.operands.size() != 2 || (node.op == OpKind::kDiv && k != 0)) return false;
  double c = 0;
  if (!constant_value(f, node.operands[1 - k], c)) return false;
  if (node.op == OpKind::kAdd) return c >= 0;
  return (node.op == OpKind::kMul || node.op == OpKind::kDiv) && c > 0;
}

// Every (node, operand) that reads `value`, directly, through views or through ops that keep its sign.
void readers(const ir::Function& f, ir::ValueId value, std::vector<std::pair<const ir::Node*, size_t>>& out) {
  for (const ir::Node& node : f.nodes)
    for (size_t k = 0; k < node.operands.size(); ++k) {
      if (node.operands[k] != value) continue;
      const bool view = node.op == OpKind::kReshape || node.op == OpKind::kView || node.op == OpKind::kBroadcast ||
                        (node.op == OpKind::kSlice && node.int_attr("axis") == 0);
      if (view || keeps_sign(f, node, k)) readers(f, node.result, out);
      if (!view) out.emplace_back(&node, k);
    }
}

}  // namespace

std::vector<InputDomain> input_domains(const ir::Function& function) {
  std::vector<InputDomain> out;
  for (ir::ValueId arg : function.args) {
    std::vector<std::pair<const ir::Node*, size_t>> uses;
    readers(function, arg, uses);
    InputDomain chosen;
    for (const auto& [node, k] : uses) {
      const InputDomain d = domain_of(function, *node, k);
      if (d.domain == Domain::kAny) continue;
      // Indices: the tightest range any reader accepts; otherwise the first reader that has a say.
      if (d.domain == Domain::kIndex || d.domain == Domain::kDistinctIndex) {
        if (chosen.domain != Domain::kIndex && chosen.domain != Domain::kDistinctIndex) chosen = d;
        chosen.limit = std::min(chosen.limit, d.limit);
        if (d.domain == Domain::kDistinctIndex) chosen.domain = Domain::kDistinctIndex;
      } else if (chosen.domain == Domain::kAny) {
        chosen = d;
      }
    }
    out.push_back(chosen);
  }
  return out;
}

void apply_domain(const InputDomain& domain, std::vector<float>& values) {
  for (float& v : values) {
    switch (domain.domain) {
      case Domain::kPositive: v = std::fabs(v) + 0.0625f; break;
      case Domain::kNonzero: v = std::copysign(std::fabs(v) + 0.5f, v); break;
      case Domain::kBounded: v = std::clamp(v, -8.0f, 8.0f); break;
      case Domain::kProduct: v = std::exp(0.02f * std::clamp(v, -1.0f, 1.0f)); break;
      default: break;
    }
  }
}

}  // namespace agentcompile::tune
