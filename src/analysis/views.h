// Layout-only views (reshape, view, a broadcast that adds no elements, a slice along the outermost
// axis) are boundary metadata, not data: a region that reads a view reads its root's buffer at a
// byte offset. The runtime binds launches this way; the compiler's chain timing links one region's
// output to the next region's input the same way.
#pragma once

#include <cstdint>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::analysis {

// A value as a launch sees it: its root (a value with a home) and the byte offset into the root's
// buffer, with the views between them resolved at `at`. Views that only reinterpret (reshape, view,
// a broadcast that adds no elements) add nothing; a slice along the outermost axis adds its start row.
struct ResolvedValue {
  ir::ValueId root = ir::kNoValue;
  int64_t byte_offset = 0;
};
Expected<ResolvedValue> resolve_value(const ir::Function& function, ir::ValueId value, const ir::SymbolBindings& at);

// Bytes of a value's tensor at `at`.
int64_t value_bytes(const ir::Function& function, ir::ValueId value, const ir::SymbolBindings& at);

}  // namespace agentcompile::analysis
