// The batched-decode pass (decode_batch.h): rewrites a one-token decode function into its per-row form.
//
// The algorithm walks decode's nodes once, in order, and keeps for each value whether it carries the
// token dim (it depends on the token ids). Such a value has a leading static 1 in decode; in decode_batch
// that dim is T. A node that reads one is copied with the dim replaced where its attributes spell it
// (reshape/view/broadcast targets) and is refused where it would act across rows (a transpose, slice,
// concat, reduction, scan or softmax over axis 0). The position argument may only feed rope, kv_append and
// attention, which take the per-row pos (and kv_append/attention the per-row base). Every new node is
// typed by inference and must come out as decode's type with the token dim replaced (or unchanged where it
// carries none): whatever the rules above miss shows up there, as an error naming the node.
#include "ir/decode_batch.h"

#include <optional>

#include "ir/verifier.h"

namespace agentcompile::ir {
namespace {

// The axis an op acts along, for the ops that have one; nullopt for the rest. Defaults follow the type
// rules (ir/infer.cpp): -1 for rows, reductions and scans, 0 for gathers and layout ops.
std::optional<int64_t> acting_axis(const Node& node, size_t rank) {
  int64_t axis = 0;
  switch (node.op) {
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
    case OpKind::kCumprod: axis = node.int_attr("axis", -1); break;
    case OpKind::kSlice:
    case OpKind::kConcat:
    case OpKind::kFlip:
    case OpKind::kIndexSelect:
    case OpKind::kGather: axis = node.int_attr("axis", 0); break;
    default: return std::nullopt;
  }
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

class RowBatcher {
 public:
  RowBatcher(const Module& module, const Function& from, std::string name) : module_(module), from_(from) {
    to_.name = std::move(name);
  }

  Expected<Function> run() {
    AC_TRY(take_arguments());
    for (const Node& node : from_.nodes) AC_TRY(rewrite(node));
    for (ValueId result : from_.results) to_.results.push_back(map_[static_cast<size_t>(result)]);
    AC_TRY(verify_function(module_, to_));
    return std::move(to_);
  }

 private:
  Status fail(const Node& node, const std::string& what) const {
    std::string at = from_.name + " -> " + to_.name + ": %" + from_.value(node.result).name + " = " + std::string(op_name(node.op));
    if (!node.loc.empty()) at += " (" + node.loc + ")";
    return error(ErrorCode::kUnsupported, at + ": " + what);
  }

  ValueId add_value(std::string name, TensorType type, int32_t producer) {
    const auto id = static_cast<ValueId>(to_.values.size());
    to_.values.push_back(Value{std::move(name), std::move(type), producer});
    return id;
  }

  Status take_arguments() {
    const std::string where = "cannot derive " + to_.name + " from " + from_.name;
    if (from_.args.size() != 2)
      return error(ErrorCode::kUnsupported, where + ": it takes " + std::to_string(from_.args.size()) +
                                                " arguments, not the token ids i32[1] and the position i32[]");
    const Value& tokens = from_.value(from_.args[0]);
    const Value& pos = from_.value(from_.args[1]);
    if (tokens.type != TensorType{DType::kI32, {Dim::of(1)}} || pos.type != TensorType{DType::kI32, {}})
      return error(ErrorCode::kUnsupported, where + ": its arguments are %" + tokens.name + " : " + tokens.type.to_string() +
                                                " and %" + pos.name + " : " + pos.type.to_string() +
                                                ", not the token ids i32[1] and the position i32[]");
    map_.assign(from_.values.size(), kNoValue);
    rows_.assign(from_.values.size(), false);
    const TensorType per_row{DType::kI32, {Dim::T()}};
    const ValueId new_tokens = add_value(tokens.name, per_row, -1);
    pos_ = add_value(pos.name, per_row, -1);
    base_ = add_value("base", per_row, -1);
    to_.args = {new_tokens, pos_, base_};
    map_[static_cast<size_t>(from_.args[0])] = new_tokens;
    rows_[static_cast<size_t>(from_.args[0])] = true;
    old_pos_ = from_.args[1];
    return Status::ok();
  }

  // Where the position may be read: rope's pos, kv_append's pos, attention's pos.
  static bool position_operand(const Node& node, size_t i) {
    return (node.op == OpKind::kRope && i == 1) || (node.op == OpKind::kKvAppend && i == 1) ||
           (node.op == OpKind::kAttention && i == 3);
  }

  Status rewrite(const Node& node) {
    Node out = node;
    bool rows = false;
    for (size_t i = 0; i < node.operands.size(); ++i) {
      const ValueId operand = node.operands[i];
      if (operand == old_pos_) {
        if (!position_operand(node, i))
          return fail(node, "reads the position %" + from_.value(operand).name +
                                " as operand " + std::to_string(i) + "; only rope, kv_append and attention may (per row)");
        out.operands[i] = pos_;
        continue;
      }
      out.operands[i] = map_[static_cast<size_t>(operand)];
      rows = rows || rows_[static_cast<size_t>(operand)];
    }
    const bool positional = node.op == OpKind::kRope || node.op == OpKind::kKvAppend || node.op == OpKind::kAttention;
    if (positional) {
      if (!rows_[static_cast<size_t>(node.operands[0])])
        return fail(node, "its first operand does not depend on the token ids, so it has no rows to place");
      if (node.operands.back() != old_pos_)
        return fail(node, "is already in the per-row form or takes its position from elsewhere than %" +
                              from_.value(old_pos_).name);
      if (node.op != OpKind::kRope) out.operands.push_back(base_);
    }
    if (node.op == OpKind::kSdpa || node.op == OpKind::kIndexCopy)
      return fail(node, "is not raised to attention / kv_append (analysis/recognize), which the per-row form needs");
    if (rows) AC_TRY(place_rows(node, out));

    AC_ASSIGN_OR_RETURN(TensorType type, infer_result_type(module_, to_, out));
    const TensorType& before = from_.type(node.result);
    const bool result_rows = rows && node.op != OpKind::kKvAppend;
    TensorType expected = before;
    if (result_rows) {
      if (before.shape.empty() || before.shape[0] != Dim::of(1))
        return fail(node, "its result " + before.to_string() + " does not lead with the token dim (1)");
      expected.shape[0] = Dim::T();
    }
    if (type != expected)
      return fail(node, "does not stay row-wise: " + before.to_string() + " would become " + type.to_string() +
                            ", not " + expected.to_string());
    out.result = add_value(from_.value(node.result).name, type, static_cast<int32_t>(to_.nodes.size()));
    map_[static_cast<size_t>(node.result)] = out.result;
    rows_[static_cast<size_t>(node.result)] = result_rows;
    to_.nodes.push_back(std::move(out));
    return Status::ok();
  }

  // A node reading a value with rows: its attributes that spell the token dim follow it to T, and it
  // must not act across the rows.
  Status place_rows(const Node& node, Node& out) const {
    const TensorType& first = from_.type(node.operands[0]);
    const size_t rank = first.shape.size();
    if (const auto axis = acting_axis(node, rank); axis && *axis == 0)
      return fail(node, "acts along axis 0, the token dim, across the sequences' rows");
    switch (node.op) {
      case OpKind::kReshape:
      case OpKind::kView:
      case OpKind::kBroadcast: {
        Shape target = node.dims_attr("shape");
        if (!rows_[static_cast<size_t>(node.operands[0])] || target.empty() || target[0] != Dim::of(1) ||
            (node.op == OpKind::kBroadcast && target.size() != rank))
          return fail(node, "target " + shape_to_string(target) + " does not keep the token dim leading");
        target[0] = Dim::T();
        out.attrs["shape"] = target;
        return Status::ok();
      }
      case OpKind::kTranspose: {
        const std::vector<Dim> perm = node.dims_attr("perm");
        if (perm.empty() || perm[0] != Dim::of(0)) return fail(node, "moves the token dim away from axis 0");
        return Status::ok();
      }
      default: return Status::ok();
    }
  }

  const Module& module_;
  const Function& from_;
  Function to_;
  std::vector<ValueId> map_;  // decode's value -> decode_batch's
  std::vector<bool> rows_;    // decode's value carries the token dim
  ValueId old_pos_ = kNoValue;
  ValueId pos_ = kNoValue, base_ = kNoValue;
};

}  // namespace

Expected<Function> derive_decode_batch(const Module& module, const std::string& from, const std::string& name) {
  const Function* decode = module.find_function(from);
  if (!decode) return error(ErrorCode::kNotFound, "module " + module.name + " has no function " + from + " to batch");
  return RowBatcher(module, *decode, name).run();
}

Status add_decode_batch(Module& module) {
  if (module.find_function(kDecodeBatchFunction)) return Status::ok();
  AC_ASSIGN_OR_RETURN(Function batched, derive_decode_batch(module));
  module.functions.push_back(std::move(batched));
  return Status::ok();
}

}  // namespace agentcompile::ir
