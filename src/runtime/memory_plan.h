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
#include "analysis/views.h"
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

// resolve_value and value_bytes (analysis/views.h) place a view inside its root's buffer.
using analysis::ResolvedValue;
using analysis::resolve_value;
using analysis::value_bytes;

}  // namespace agentcompile::runtime
