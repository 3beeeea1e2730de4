// Use-def facts of a function: which nodes read each value, and where a value's storage really comes
// from once layout-only views are seen through.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace agentcompile::analysis {

struct UseDef {
  std::vector<std::vector<int>> users;  // per value: indices of the nodes that read it, in order
  std::vector<bool> is_result;          // per value: returned by the function
};

UseDef compute_use_def(const ir::Function& function);

// Follows reshape/view chains back to the value whose buffer they alias (slices and transposes are
// not seen through: they change which elements are read).
ir::ValueId storage_root(const ir::Function& function, ir::ValueId value);

}  // namespace agentcompile::analysis
