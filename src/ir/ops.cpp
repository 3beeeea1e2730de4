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
    {OpKind::kKvAppend, "kv_append", OpClass::kSideEffect, 2, 2},
    {OpKind::kAttention, "attention", OpClass::kAttention, 4, 4},
    {OpKind::kSoftmax, "softmax", OpClass::kSoftmax, 1, 1},
    {OpKind::kReduceSum, "reduce_sum", OpClass::kReduction, 1, 1},
    {OpKind::kReduceMax, "reduce_max", OpClass::kReduction, 1, 1},
    {OpKind::kReduceMean, "reduce_mean", OpClass::kReduction, 1, 1},
    {OpKind::kArgmax, "argmax", OpClass::kReduction, 1, 1},
};
}  // namespace

const OpInfo& op_info(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }
std::string_view op_name(OpKind kind) { return op_info(kind).name; }

std::optional<OpKind> parse_op(std::string_view name) {
  for (const auto& op : kOps)
    if (op.name == name) return op.kind;
  return std::nullopt;
}

}  // namespace agentcompile::ir
