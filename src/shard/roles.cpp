// Finding the sharding roles (see roles.h and shard.h).
//
// For each linear in node order, its input is walked back through the ops a split value may pass
// (views, casts, pointwise ops, RoPE, norms, KV appends, attention) until linears end every path: the
// linear is then row-parallel and those linears its column-parallel producers. A group is taken only
// when none of its linears has a role yet, so in a chain fc1 -> gelu -> fc2 -> gelu -> fc3 the first
// pair is split and fc3 stays whole (a second split would need the sum in between anyway). A walk that
// meets anything else (an argument, an embedding, a slice, a reduction) leaves the linear replicated:
// the pre-norm in front of q/k/v leads back through the residual stream to the embedding, so q/k/v are
// never taken for row-parallel ones. Whether each split value can really be split is checked when the
// rank module is built (rewrite.cpp), where errors name the node.
#include "shard/roles.h"

#include "analysis/use_def.h"

namespace agentcompile::shard {

using ir::OpKind;

const char* role_name(Role role) {
  switch (role) {
    case Role::kReplicated: return "replicated";
    case Role::kColumn: return "column-parallel";
    case Role::kRow: return "row-parallel";
    case Role::kVocab: return "vocab-parallel";
  }
  return "?";
}

namespace {

bool is_source(OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kSource; }

// The linears a row-parallel candidate's input comes from, and the states on the way.
class BackWalk {
 public:
  explicit BackWalk(const ir::Function& function) : f_(function) {}

  bool visit(ir::ValueId value) {
    if (!seen_.insert(value).second) return true;
    const int producer = f_.value(value).producer;
    if (producer < 0) return false;  // an argument: nothing split produced it
    const ir::Node& node = f_.nodes[static_cast<size_t>(producer)];
    switch (node.op) {
      case OpKind::kLinear: linears.insert(producer); return true;
      case OpKind::kReshape:
      case OpKind::kView:
      case OpKind::kRope:
      case OpKind::kRmsNorm: return visit(node.operands[0]);
      case OpKind::kKvAppend:
        states.insert(node.string_attr("state"));
        return visit(node.operands[0]);
      case OpKind::kAttention: return visit(node.operands[0]) && visit(node.operands[1]) && visit(node.operands[2]);
      default: break;
    }
    if (ir::op_info(node.op).op_class != ir::OpClass::kPointwise) return false;
    for (ir::ValueId operand : node.operands) {
      const int p = f_.value(operand).producer;
      if (p >= 0 && is_source(f_.nodes[static_cast<size_t>(p)].op)) continue;  // a weight or constant operand
      if (!visit(operand)) return false;
    }
    return true;
  }

  std::set<int> linears;
  std::set<std::string> states;

 private:
  const ir::Function& f_;
  std::set<ir::ValueId> seen_;
};

// A linear whose result reaches a function result through casts and views only (the logits).
bool feeds_result_only(const ir::Function& function, const analysis::UseDef& facts, const ir::Node& linear) {
  ir::ValueId value = linear.result;
  while (true) {
    if (facts.is_result[static_cast<size_t>(value)]) return facts.users[static_cast<size_t>(value)].empty();
    const auto& users = facts.users[static_cast<size_t>(value)];
    if (users.size() != 1) return false;
    const ir::Node& user = function.nodes[static_cast<size_t>(users.front())];
    if (user.op != OpKind::kCast && user.op != OpKind::kReshape && user.op != OpKind::kView) return false;
    value = user.result;
  }
}

std::string weight_name(const ir::Function& function, ir::ValueId operand) {
  const int producer = function.value(operand).producer;
  if (producer < 0 || function.nodes[static_cast<size_t>(producer)].op != OpKind::kWeight) return "";
  return function.nodes[static_cast<size_t>(producer)].string_attr("name");
}

}  // namespace

Expected<ModuleRoles> find_roles(const ir::Module& module) {
  ModuleRoles roles;
  std::set<std::string> read_whole;  // parameters some non-linear op reads (an embedding table)
  for (const ir::Function& function : module.functions) {
    FunctionRoles fr;
    fr.node_roles.assign(function.nodes.size(), Role::kReplicated);
    for (size_t i = 0; i < function.nodes.size(); ++i) {
      const ir::Node& node = function.nodes[i];
      if (node.op != OpKind::kLinear || fr.node_roles[i] != Role::kReplicated) continue;
      BackWalk walk(function);
      if (!walk.visit(node.operands[0]) || walk.linears.empty()) continue;
      bool free = true;
      for (int producer : walk.linears) free = free && fr.node_roles[static_cast<size_t>(producer)] == Role::kReplicated;
      if (!free) continue;
      fr.node_roles[i] = Role::kRow;
      for (int producer : walk.linears) fr.node_roles[static_cast<size_t>(producer)] = Role::kColumn;
      roles.split_states.insert(walk.states.begin(), walk.states.end());
    }
    const analysis::UseDef facts = analysis::compute_use_def(function);
    for (size_t i = 0; i < function.nodes.size(); ++i) {
      const ir::Node& node = function.nodes[i];
      if (node.op == OpKind::kLinear && fr.node_roles[i] == Role::kReplicated && feeds_result_only(function, facts, node))
        fr.node_roles[i] = Role::kVocab;
    }
    // Parameters take their linear's role; one read by two roles is an error.
    for (size_t i = 0; i < function.nodes.size(); ++i) {
      const ir::Node& node = function.nodes[i];
      for (size_t o = 0; o < node.operands.size(); ++o) {
        const std::string name = weight_name(function, node.operands[o]);
        if (name.empty()) continue;
        if (node.op != OpKind::kLinear) {
          read_whole.insert(name);
          continue;
        }
        const Role role = fr.node_roles[i];
        if (role == Role::kReplicated || (role == Role::kRow && o == 2)) {  // a row-parallel bias is added once, whole
          read_whole.insert(name);
          continue;
        }
        auto [it, inserted] = roles.params.emplace(name, role);
        if (!inserted && it->second != role)
          return error(ErrorCode::kUnsupported, "function @" + function.name + ": %" + function.value(node.result).name +
                                                    " = linear reads @" + name + " as " + role_name(role) +
                                                    ", another linear reads it as " + role_name(it->second));
      }
    }
    roles.functions.push_back(std::move(fr));
  }
  for (const auto& [name, role] : roles.params) {
    if (!read_whole.count(name)) continue;
    if (role != Role::kVocab)
      return error(ErrorCode::kUnsupported, "parameter @" + name + " is read whole by one op and " + role_name(role) +
                                                " by a linear: a parameter is split one way");
    roles.tied_heads.insert(name);
  }
  return roles;
}

}  // namespace agentcompile::shard
