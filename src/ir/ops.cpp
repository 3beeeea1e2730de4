// Operation table: names, classes and operand counts.
#include "ir/ops.h"

namespace agentcompile::ir {

namespace {
constexpr OpInfo kOps[] = {
    {OpKind::kWeight, "weight", OpClass::kSource, 0, 0},
    {OpKind::kEmbedding, "embedding", OpClass::kGather, 2, 2},
    {OpKind::kLinear, "linear", OpClass::kMatmul, 2, 3},
    {OpKind::kMatmul, "matmul", OpClass::kMatmul, 2, 2},
    {OpKind::kAdd, "add", OpClass::kPointwise, 2, 2},
    {OpKind::kSub, "sub", OpClass::kPointwise, 2, 2},
    {OpKind::kMul, "mul", OpClass::kPointwise, 2, 2},
    {OpKind::kDiv, "div", OpClass::kPointwise, 2, 2},
    {OpKind::kSilu, "silu", OpClass::kPointwise, 1, 1},
    {OpKind::kExp, "exp", OpClass::kPointwise, 1, 1},
    {OpKind::kNeg, "neg", OpClass::kPointwise, 1, 1},
    {OpKind::kCast, "cast", OpClass::kPointwise, 1, 1},
    {OpKind::kRmsNorm, "rmsnorm", OpClass::kNorm, 2, 2},
    {OpKind::kRope, "rope", OpClass::kRope, 2, 2},
    {OpKind::kReshape, "reshape", OpClass::kLayout, 1, 1},
    {OpKind::kView, "view", OpClass::kLayout, 1, 1},
    {OpKind::kTranspose, "transpose", OpClass::kLayout, 1, 1},
    {OpKind::kSlice, "slice", OpClass::kLayout, 1, 1},
    {OpKind::kBroadcast, "broadcast", OpClass::kLayout, 1, 1},
    {OpKind::kKvAppend, "kv_append", OpClass::kSideEffect, 2, 3},
    {OpKind::kAttention, "attention", OpClass::kAttention, 4, 5},
    {OpKind::kSoftmax, "softmax", OpClass::kSoftmax, 1, 1},
    {OpKind::kReduceSum, "reduce_sum", OpClass::kReduction, 1, 1},
    {OpKind::kReduceMax, "reduce_max", OpClass::kReduction, 1, 1},
    {OpKind::kReduceMean, "reduce_mean", OpClass::kReduction, 1, 1},
    {OpKind::kArgmax, "argmax", OpClass::kReduction, 1, 1},
    {OpKind::kConstant, "constant", OpClass::kSource, 0, 0},
    {OpKind::kArange, "arange", OpClass::kSource, 0, 0},
    {OpKind::kIndexSelect, "index_select", OpClass::kGather, 2, 2},
    {OpKind::kGather, "gather", OpClass::kGather, 2, 2},
    {OpKind::kPow, "pow", OpClass::kPointwise, 2, 2},
    {OpKind::kMaximum, "maximum", OpClass::kPointwise, 2, 2},
    {OpKind::kMinimum, "minimum", OpClass::kPointwise, 2, 2},
    {OpKind::kEq, "eq", OpClass::kPointwise, 2, 2},
    {OpKind::kNe, "ne", OpClass::kPointwise, 2, 2},
    {OpKind::kLt, "lt", OpClass::kPointwise, 2, 2},
    {OpKind::kLe, "le", OpClass::kPointwise, 2, 2},
    {OpKind::kGt, "gt", OpClass::kPointwise, 2, 2},
    {OpKind::kGe, "ge", OpClass::kPointwise, 2, 2},
    {OpKind::kLogicalAnd, "logical_and", OpClass::kPointwise, 2, 2},
    {OpKind::kLogicalOr, "logical_or", OpClass::kPointwise, 2, 2},
    {OpKind::kWhere, "where", OpClass::kPointwise, 3, 3},
    {OpKind::kLog, "log", OpClass::kPointwise, 1, 1},
    {OpKind::kLog1p, "log1p", OpClass::kPointwise, 1, 1},
    {OpKind::kExpm1, "expm1", OpClass::kPointwise, 1, 1},
    {OpKind::kSqrt, "sqrt", OpClass::kPointwise, 1, 1},
    {OpKind::kRsqrt, "rsqrt", OpClass::kPointwise, 1, 1},
    {OpKind::kAbs, "abs", OpClass::kPointwise, 1, 1},
    {OpKind::kTanh, "tanh", OpClass::kPointwise, 1, 1},
    {OpKind::kSigmoid, "sigmoid", OpClass::kPointwise, 1, 1},
    {OpKind::kRelu, "relu", OpClass::kPointwise, 1, 1},
    {OpKind::kErf, "erf", OpClass::kPointwise, 1, 1},
    {OpKind::kSin, "sin", OpClass::kPointwise, 1, 1},
    {OpKind::kCos, "cos", OpClass::kPointwise, 1, 1},
    {OpKind::kReciprocal, "reciprocal", OpClass::kPointwise, 1, 1},
    {OpKind::kFloor, "floor", OpClass::kPointwise, 1, 1},
    {OpKind::kCeil, "ceil", OpClass::kPointwise, 1, 1},
    {OpKind::kRound, "round", OpClass::kPointwise, 1, 1},
    {OpKind::kSign, "sign", OpClass::kPointwise, 1, 1},
    {OpKind::kGelu, "gelu", OpClass::kPointwise, 1, 1},
    {OpKind::kLeakyRelu, "leaky_relu", OpClass::kPointwise, 1, 1},
    {OpKind::kClamp, "clamp", OpClass::kPointwise, 1, 1},
    {OpKind::kLogicalNot, "logical_not", OpClass::kPointwise, 1, 1},
    {OpKind::kLayerNorm, "layer_norm", OpClass::kNorm, 1, 3},
    {OpKind::kConcat, "concat", OpClass::kLayout, 1, kMaxOperands},
    {OpKind::kFlip, "flip", OpClass::kLayout, 1, 1},
    {OpKind::kIndexCopy, "index_copy", OpClass::kSideEffect, 2, 2},
    {OpKind::kSdpa, "sdpa", OpClass::kAttention, 3, 4},
    {OpKind::kLogSoftmax, "log_softmax", OpClass::kSoftmax, 1, 1},
    {OpKind::kReduceMin, "reduce_min", OpClass::kReduction, 1, 1},
    {OpKind::kReduceProd, "reduce_prod", OpClass::kReduction, 1, 1},
    {OpKind::kArgmin, "argmin", OpClass::kReduction, 1, 1},
    {OpKind::kCumsum, "cumsum", OpClass::kScan, 1, 1},
    {OpKind::kCumprod, "cumprod", OpClass::kScan, 1, 1},
    {OpKind::kAllReduce, "all_reduce", OpClass::kCollective, 1, 1},
    {OpKind::kAllGather, "all_gather", OpClass::kCollective, 1, 1},
    {OpKind::kRandomUniform, "random_uniform", OpClass::kSource, 0, 0},
};
constexpr int kOpCount = static_cast<int>(sizeof(kOps) / sizeof(kOps[0]));
static_assert(kOpCount == static_cast<int>(OpKind::kRandomUniform) + 1, "every OpKind has one row in kOps");

constexpr bool rows_in_enum_order() {
  for (int i = 0; i < kOpCount; ++i)
    if (static_cast<int>(kOps[i].kind) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kOps rows follow the OpKind order");
}  // namespace

const OpInfo& op_info(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }
std::string_view op_name(OpKind kind) { return op_info(kind).name; }
int op_count() { return kOpCount; }

std::optional<OpKind> parse_op(std::string_view name) {
  for (const auto& op : kOps)
    if (op.name == name) return op.kind;
  return std::nullopt;
}

bool is_comparison(OpKind kind) {
  switch (kind) {
    case OpKind::kEq:
    case OpKind::kNe:
    case OpKind::kLt:
    case OpKind::kLe:
    case OpKind::kGt:
    case OpKind::kGe:
      return true;
    default:
      return false;
  }
}

bool is_binary_pointwise(OpKind kind) {
  const OpInfo& info = op_info(kind);
  return info.op_class == OpClass::kPointwise && info.min_operands == 2 && info.max_operands == 2;
}

bool is_unary_pointwise(OpKind kind) {
  const OpInfo& info = op_info(kind);
  return info.op_class == OpClass::kPointwise && info.max_operands == 1;
}

}  // namespace agentcompile::ir
