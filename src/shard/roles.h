// Which linears of a module are column-parallel, row-parallel or the vocab-parallel LM head, and which
// states hold split kv heads (the structural rules of shard/shard.h), for every function at once, so a
// parameter read by prefill and decode is split the same way in both.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::shard {

enum class Role { kReplicated, kColumn, kRow, kVocab };
const char* role_name(Role role);

struct FunctionRoles {
  std::vector<Role> node_roles;  // per node; only linears are ever not kReplicated
};

struct ModuleRoles {
  std::vector<FunctionRoles> functions;  // in module order
  // How each parameter read as a linear's weight or bias is split: kColumn/kVocab by rows (axis 0),
  // kRow by columns (axis 1); absent: replicated.
  std::map<std::string, Role> params;
  // Tied LM heads: parameters read both whole (an embedding) and as a vocab-parallel head.
  std::set<std::string> tied_heads;
  std::set<std::string> split_states;  // states that hold only the rank's kv heads
};

// Errors name the function, the node and the parameter whose roles disagree.
Expected<ModuleRoles> find_roles(const ir::Module& module);

}  // namespace agentcompile::shard
