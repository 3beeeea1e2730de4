// Building a rank's module from the roles (see shard.h for the scheme).
//
// Parameters and states are declared first, at their rank shapes; then every function is copied node by
// node in order, each value tagged with the axis it is split along over the ranks (-1: whole, the same
// on every rank). Each copied node is retyped by inference against the rank module, so the per-rank
// shapes fall out of the parameters and states; the rules below only say where a split may go and
// which attributes (a reshape's target shape) change with it.
#include <algorithm>
#include <map>

#include "ir/verifier.h"
#include "shard/roles.h"
#include "shard/shard.h"
#include "shard/split_axis.h"

namespace agentcompile::shard {

using ir::OpKind;

namespace {

constexpr int64_t kWhole = -1;

Status unsupported(const std::string& message) { return error(ErrorCode::kUnsupported, message); }

// The rank's share of `n` entries, or an error naming what does not divide.
Expected<int64_t> share(int64_t n, int ranks, const std::string& what) {
  if (n % ranks != 0)
    return unsupported(what + ": " + std::to_string(n) + " does not divide over " + std::to_string(ranks) + " ranks");
  return n / ranks;
}

// Parameters at their rank shapes: split ones keep their range (several for a fused tensor's aliases).
Status declare_params(const ir::Module& module, const ModuleRoles& roles, const ShardOptions& o, ir::Module& out) {
  auto role_of = [&](const std::string& name) {
    auto it = roles.params.find(name);
    return it == roles.params.end() ? Role::kReplicated : it->second;
  };
  for (const ir::ParamDecl& param : module.params) {
    ir::ParamDecl p = param;
    const Role role = role_of(param.name);
    const bool split = role != Role::kReplicated && !roles.tied_heads.count(param.name);
    if (param.is_alias()) {
      if (split && role == Role::kRow)
        return unsupported("parameter @" + param.name + " (rows of @" + param.alias_of +
                           ") is row-parallel: a fused tensor is split by rows only");
    } else if (split) {
      if (is_quantized(param.type.dtype))
        return unsupported("parameter @" + param.name + " : " + param.type.to_string() +
                           " is quantized; sharding quantized weights is not implemented");
      const size_t axis = role == Role::kRow ? 1 : 0;
      if (param.type.shape.size() <= axis)
        return unsupported("parameter @" + param.name + " : " + param.type.to_string() + " has no axis " + std::to_string(axis) +
                           " to split " + role_name(role));
      const int64_t n = param.type.shape[axis].value;
      AC_ASSIGN_OR_RETURN(int64_t part, share(n, o.ranks, "parameter @" + param.name + " (" + role_name(role) + ", axis " +
                                                               std::to_string(axis) + ")"));
      p.shard_axis = static_cast<int64_t>(axis);
      p.shard_of = n;
      p.shard_ranges = {{o.rank * part, part}};
      p.type.shape[axis] = ir::Dim::of(part);
    }
    out.params.push_back(std::move(p));
  }
  // Fused tensors: each split alias keeps its rank rows; its source keeps exactly those, in order.
  for (ir::ParamDecl& source : out.params) {
    std::vector<ir::ParamDecl*> aliases;
    for (ir::ParamDecl& p : out.params)
      if (p.alias_of == source.name) aliases.push_back(&p);
    const auto split_alias = [&](const ir::ParamDecl* p) { return role_of(p->name) != Role::kReplicated; };
    const size_t split = static_cast<size_t>(std::count_if(aliases.begin(), aliases.end(), split_alias));
    if (split == 0) continue;
    if (split != aliases.size() || source.is_shard() || role_of(source.name) != Role::kReplicated)
      return unsupported("fused parameter @" + source.name + " is read both split (through an alias) and whole");
    std::sort(aliases.begin(), aliases.end(), [](auto* a, auto* b) { return a->alias_row < b->alias_row; });
    const int64_t whole = source.type.shape[0].value;
    int64_t row = 0;
    for (ir::ParamDecl* alias : aliases) {
      AC_ASSIGN_OR_RETURN(int64_t part, share(alias->type.shape[0].value, o.ranks,
                                              "parameter @" + alias->name + " (rows of @" + source.name + ")"));
      source.shard_ranges.push_back({alias->alias_row + o.rank * part, part});
      alias->alias_row = row;
      alias->type.shape[0] = ir::Dim::of(part);
      row += part;
    }
    source.shard_axis = 0;
    source.shard_of = whole;
    source.type.shape[0] = ir::Dim::of(row);
  }
  // A tied LM head reads the rank's vocab rows of the embedding table through an alias.
  for (const std::string& name : roles.tied_heads) {
    const ir::ParamDecl* table = module.find_param(name);
    if (table->is_alias() || table->type.shape.size() != 2)
      return unsupported("tied LM head @" + name + " : " + table->type.to_string() + " must be a matrix of its own");
    AC_ASSIGN_OR_RETURN(int64_t part, share(table->type.shape[0].value, o.ranks, "vocabulary rows of tied LM head @" + name));
    ir::ParamDecl alias{name + ".vocab_part", table->type};
    alias.type.shape[0] = ir::Dim::of(part);
    alias.alias_of = name;
    alias.alias_row = o.rank * part;
    out.params.push_back(std::move(alias));
  }
  return Status::ok();
}

Status declare_states(const ir::Module& module, const ModuleRoles& roles, const ShardOptions& o, ir::Module& out) {
  for (const ir::StateDecl& state : module.states) {
    ir::StateDecl s = state;
    if (roles.split_states.count(state.name)) {
      AC_ASSIGN_OR_RETURN(int64_t part, share(state.type.shape[1].value, o.ranks, "kv heads of state @" + state.name));
      s.type.shape[1] = ir::Dim::of(part);
    }
    out.states.push_back(std::move(s));
  }
  return Status::ok();
}

class FunctionRewriter {
 public:
  FunctionRewriter(const ir::Function& f, const FunctionRoles& roles, const ModuleRoles& module_roles, const ShardOptions& o,
                   ir::Module& out)
      : f_(f), roles_(roles), module_roles_(module_roles), o_(o), out_(out) {}

  Expected<ir::Function> run() {
    g_.name = f_.name;
    remap_.assign(f_.values.size(), ir::kNoValue);
    for (ir::ValueId arg : f_.args) {
      remap_[static_cast<size_t>(arg)] = add_value(f_.value(arg).name, f_.type(arg), -1, kWhole);
      g_.args.push_back(remap_[static_cast<size_t>(arg)]);
    }
    for (size_t i = 0; i < f_.nodes.size(); ++i) {
      Status status = copy_node(i);
      if (!status.is_ok()) return status.with_context("function @" + f_.name + ": %" + f_.value(f_.nodes[i].result).name + " = " +
                                                      std::string(ir::op_name(f_.nodes[i].op)));
    }
    for (ir::ValueId result : f_.results) {
      const ir::ValueId v = remap_[static_cast<size_t>(result)];
      if (split_[static_cast<size_t>(v)] != kWhole)
        return unsupported("function @" + f_.name + " returns %" + f_.value(result).name + ", which is split over the ranks");
      g_.results.push_back(v);
    }
    return std::move(g_);
  }

 private:
  ir::ValueId add_value(const std::string& name, const ir::TensorType& type, int32_t producer, int64_t split) {
    g_.values.push_back(ir::Value{name, type, producer});
    split_.push_back(split);
    return static_cast<ir::ValueId>(g_.values.size() - 1);
  }

  // Appends a node (operands already rank values), typed by inference against the rank module.
  Expected<ir::ValueId> emit(OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs, const std::string& name,
                             int64_t split, const std::string& loc) {
    ir::Node node;
    node.op = op;
    node.operands = std::move(operands);
    node.attrs = std::move(attrs);
    node.loc = loc;
    AC_ASSIGN_OR_RETURN(ir::TensorType type, ir::infer_result_type(out_, g_, node));
    node.result = add_value(name, type, static_cast<int32_t>(g_.nodes.size()), split);
    g_.nodes.push_back(std::move(node));
    return node_result();
  }
  ir::ValueId node_result() const { return g_.nodes.back().result; }

  int64_t split_of(ir::ValueId rank_value) const { return split_[static_cast<size_t>(rank_value)]; }
  const ir::TensorType& old_type(ir::ValueId old) const { return f_.type(old); }
  Status needs_whole(ir::ValueId rank_value, const std::string& what) const {
    if (split_of(rank_value) == kWhole) return Status::ok();
    return unsupported(what + " %" + g_.value(rank_value).name + " is split over the ranks along axis " +
                       std::to_string(split_of(rank_value)) + ", which this op cannot take");
  }

  Status copy_node(size_t index) {
    const ir::Node& node = f_.nodes[index];
    const std::string& name = f_.value(node.result).name;
    std::vector<ir::ValueId> in;
    for (ir::ValueId operand : node.operands) in.push_back(remap_[static_cast<size_t>(operand)]);
    auto keep = [&](int64_t split, ir::Attrs attrs) -> Status {
      AC_ASSIGN_OR_RETURN(ir::ValueId v, emit(node.op, in, std::move(attrs), name, split, node.loc));
      remap_[static_cast<size_t>(node.result)] = v;
      return Status::ok();
    };
    switch (node.op) {
      case OpKind::kLinear: return copy_linear(index, in);
      case OpKind::kReshape:
      case OpKind::kView: {
        const int64_t split = split_of(in[0]);
        if (split == kWhole) return keep(kWhole, node.attrs);
        const ir::Shape to = node.dims_attr("shape");
        const int64_t axis = reshape_split_axis(old_type(node.operands[0]).shape, to, split);
        if (axis < 0)
          return unsupported("reshaping " + old_type(node.operands[0]).to_string() + " split along axis " + std::to_string(split) +
                             " to " + ir::shape_to_string(to) + " would mix the ranks' blocks");
        ir::Shape rank_to = to;
        AC_ASSIGN_OR_RETURN(int64_t part, share(to[static_cast<size_t>(axis)].value, o_.ranks,
                                                "dim " + std::to_string(axis) + " of " + ir::shape_to_string(to) +
                                                    (to.size() >= 3 && axis + 2 == static_cast<int64_t>(to.size()) ? " (the heads)" : "")));
        rank_to[static_cast<size_t>(axis)] = ir::Dim::of(part);
        ir::Attrs attrs = node.attrs;
        attrs["shape"] = rank_to;
        return keep(axis, std::move(attrs));
      }
      case OpKind::kTranspose: {
        const int64_t split = split_of(in[0]);
        return keep(split == kWhole ? kWhole : transpose_split_axis(node.dims_attr("perm"), split), node.attrs);
      }
      case OpKind::kSlice: {
        const int64_t split = split_of(in[0]);
        const auto rank = static_cast<int64_t>(old_type(node.operands[0]).shape.size());
        const int64_t axis = node.int_attr("axis");
        if (split != kWhole && (axis < 0 ? axis + rank : axis) == split)
          return needs_whole(in[0], "the sliced operand");
        return keep(split, node.attrs);
      }
      case OpKind::kRope:
      case OpKind::kRmsNorm:
      case OpKind::kLayerNorm: {
        // Per-row and per-head ops: split along any axis but the last (the one they normalize or rotate).
        const int64_t split = split_of(in[0]);
        if (split != kWhole && split + 1 == static_cast<int64_t>(old_type(node.operands[0]).shape.size()))
          return needs_whole(in[0], "the normalized or rotated operand (its last axis is its row)");
        for (size_t i = 1; i < in.size(); ++i) AC_TRY(needs_whole(in[i], "operand " + std::to_string(i)));
        return keep(split, node.attrs);
      }
      case OpKind::kKvAppend: {
        const std::string state = node.string_attr("state");
        const int64_t want = module_roles_.split_states.count(state) ? 1 : kWhole;
        if (split_of(in[0]) != want)
          return unsupported("the rows appended to @" + state + " are " +
                             (split_of(in[0]) == kWhole ? "whole" : "split along axis " + std::to_string(split_of(in[0]))) +
                             " but the state holds " + (want == kWhole ? "every kv head" : "the rank's kv heads"));
        return keep(want, node.attrs);
      }
      case OpKind::kAttention: {
        const int64_t split = split_of(in[0]);
        for (size_t i = 0; i < 3; ++i)
          if (split_of(in[i]) != (split == kWhole ? kWhole : 1))
            return unsupported("q, k and v must all be split by heads or all be whole");
        return keep(split, node.attrs);
      }
      case OpKind::kAllReduce:
      case OpKind::kAllGather: return unsupported("the module is already sharded");
      default: break;
    }
    if (ir::op_info(node.op).op_class == ir::OpClass::kPointwise) return copy_pointwise(node, in, keep);
    for (size_t i = 0; i < in.size(); ++i) AC_TRY(needs_whole(in[i], "operand " + std::to_string(i)));
    return keep(kWhole, node.attrs);
  }

  // Pointwise ops keep a split when every operand is split the same way, or is whole and broadcasts
  // along the split axis (a size-1 or missing dim).
  template <typename Keep>
  Status copy_pointwise(const ir::Node& node, const std::vector<ir::ValueId>& in, Keep& keep) {
    const size_t rank = old_type(node.result).shape.size();
    int64_t split = kWhole;
    for (ir::ValueId v : in)
      if (split_of(v) != kWhole) split = split_of(v);
    if (split == kWhole) return keep(kWhole, node.attrs);
    for (size_t i = 0; i < in.size(); ++i) {
      const ir::Shape& shape = old_type(node.operands[i]).shape;
      const int64_t dim = split - static_cast<int64_t>(rank - shape.size());
      const bool broadcasts = dim < 0 || (shape[static_cast<size_t>(dim)].is_static() && shape[static_cast<size_t>(dim)].value == 1);
      if (split_of(in[i]) == kWhole ? !broadcasts : (shape.size() != rank || split_of(in[i]) != split))
        return unsupported("operand " + std::to_string(i) + " " + old_type(node.operands[i]).to_string() +
                           (split_of(in[i]) == kWhole ? " is whole and does not broadcast along axis "
                                                      : " is split differently from the result's axis ") +
                           std::to_string(split));
    }
    return keep(split, node.attrs);
  }

  Status copy_linear(size_t index, std::vector<ir::ValueId> in) {
    const ir::Node& node = f_.nodes[index];
    const std::string& name = f_.value(node.result).name;
    const Role role = roles_.node_roles[index];
    auto set = [&](ir::ValueId v) { remap_[static_cast<size_t>(node.result)] = v; };
    const int64_t last = static_cast<int64_t>(old_type(node.result).shape.size()) - 1;
    for (size_t i = 1; i < in.size(); ++i) AC_TRY(needs_whole(in[i], "weight or bias"));
    switch (role) {
      case Role::kReplicated: {
        AC_TRY(needs_whole(in[0], "the input"));
        AC_ASSIGN_OR_RETURN(ir::ValueId v, emit(OpKind::kLinear, in, node.attrs, name, kWhole, node.loc));
        set(v);
        return Status::ok();
      }
      case Role::kColumn: {
        AC_TRY(needs_whole(in[0], "the input of a column-parallel linear"));
        AC_ASSIGN_OR_RETURN(ir::ValueId v, emit(OpKind::kLinear, in, node.attrs, name, last, node.loc));
        set(v);
        return Status::ok();
      }
      case Role::kRow: {
        if (split_of(in[0]) != last)
          return unsupported("the input of a row-parallel linear must be split along its last axis");
        std::vector<ir::ValueId> matmul = {in[0], in[1]};
        AC_ASSIGN_OR_RETURN(ir::ValueId partial, emit(OpKind::kLinear, matmul, node.attrs, name + ".partial", kWhole, node.loc));
        const bool bias = in.size() == 3;
        AC_ASSIGN_OR_RETURN(ir::ValueId sum, emit(OpKind::kAllReduce, {partial}, {{"ranks", int64_t{o_.ranks}}},
                                                  bias ? name + ".sum" : name, kWhole, node.loc));
        if (!bias) {
          set(sum);
          return Status::ok();
        }
        AC_ASSIGN_OR_RETURN(ir::ValueId v, emit(OpKind::kAdd, {sum, in[2]}, {}, name, kWhole, node.loc));
        set(v);
        return Status::ok();
      }
      case Role::kVocab: {
        AC_TRY(needs_whole(in[0], "the input of the LM head"));
        const int p = f_.value(node.operands[1]).producer;
        const std::string weight = f_.nodes[static_cast<size_t>(p)].string_attr("name");
        if (module_roles_.tied_heads.count(weight)) {  // the rank's rows of the tied table, through its alias
          AC_ASSIGN_OR_RETURN(in[1], emit(OpKind::kWeight, {}, {{"name", weight + ".vocab_part"}}, name + ".vocab_part", kWhole, ""));
        }
        AC_ASSIGN_OR_RETURN(ir::ValueId part, emit(OpKind::kLinear, in, node.attrs, name + ".part", last, node.loc));
        AC_ASSIGN_OR_RETURN(ir::ValueId v, emit(OpKind::kAllGather, {part}, {{"axis", last}, {"ranks", int64_t{o_.ranks}}}, name,
                                                kWhole, node.loc));
        set(v);
        return Status::ok();
      }
    }
    return error(ErrorCode::kInternal, "unknown role");
  }

  const ir::Function& f_;
  const FunctionRoles& roles_;
  const ModuleRoles& module_roles_;
  const ShardOptions& o_;
  ir::Module& out_;
  ir::Function g_;
  std::vector<ir::ValueId> remap_;  // old value -> rank value
  std::vector<int64_t> split_;      // per rank value: the axis it is split along, or kWhole
};

}  // namespace

Expected<ir::Module> shard_module(const ir::Module& module, const ShardOptions& options) {
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks)
    return error(ErrorCode::kInvalidArgument, "rank " + std::to_string(options.rank) + " of " + std::to_string(options.ranks) +
                                                  " ranks is not a rank of the group");
  AC_ASSIGN_OR_RETURN(ModuleRoles roles, find_roles(module));
  ir::Module out;
  out.name = module.name;
  AC_TRY(declare_params(module, roles, options, out).with_context("sharding module " + module.name));
  AC_TRY(declare_states(module, roles, options, out).with_context("sharding module " + module.name));
  for (size_t i = 0; i < module.functions.size(); ++i) {
    AC_ASSIGN_OR_RETURN(ir::Function function,
                        FunctionRewriter(module.functions[i], roles.functions[i], roles, options, out).run());
    out.functions.push_back(std::move(function));
  }
  AC_TRY(ir::verify_module(out).with_context("the rank module of " + module.name));
  return out;
}

}  // namespace agentcompile::shard
