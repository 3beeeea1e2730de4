// Device memory for the activations of one function: every value a region site writes gets a home
// in one arena, sized for the largest call (T tokens, L cache rows), and values whose last reader
// has run give their bytes back for later sites. Function arguments live in engine buffers; the
// results of kv_append live in their KV-cache state; layout-only views are resolved at launch time
// to their root value plus a byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "runtime/artifact_reader.h"

namespace agentcompile::runtime {

struct ValueHome {
  enum class Kind { kNone, kArena, kArgument, kState };
  Kind kind = Kind::kNone;
  size_t offset = 0;   // kArena: byte offset in the arena
  int argument = -1;   // kArgument: index into the function's args
  std::string state;   // kState: the state (KV cache) name
};

struct MemoryPlan {
  std::vector<ValueHome> homes;  // per value id of the function
  size_t arena_bytes = 0;        // high-water mark
  size_t naive_bytes = 0;        // what one buffer per value would take (for the report)
};

// Plans the arena of `function` for calls of up to `max` (T tokens, L rows). Errors name a site
// that reads a value no earlier site (or argument) defines.
Expected<MemoryPlan> plan_memory(const ir::Function& function, const std::vector<SiteRecord>& sites, const ir::SymbolBindings& max);

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

}  // namespace agentcompile::runtime
