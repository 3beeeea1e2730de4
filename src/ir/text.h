// The IR's text form: a printer and a parser that round-trip (parse(print(m)) == m).
//
//   module qwen3 {
//     param @model.embed_tokens.weight : bf16[151936, 2048]
//     state @kv.0.k : bf16[L, 8, 128]
//     func @decode(%tokens: i32[1], %pos: i32[]) -> (f32[1, 151936]) {
//       %0 = weight {name = "model.embed_tokens.weight"} : bf16[151936, 2048]
//       %1 = embedding(%0, %tokens) : bf16[1, 2048]
//       %2 = rmsnorm(%1, %x) {eps = 1e-06} : bf16[1, 2048]
//       ...
//       return %57
//     }
//   }
//
// Nodes without operands omit `(...)`, nodes without attributes omit `{...}`. Attribute values are
// integers, floats (always written with '.', 'e', inf or nan, and exact: the shortest %g text, 6 to 17
// digits, that reads back to the same double), quoted strings (escapes \" \\ \n \t \r \xHH) and dim lists `[T, 16]`.
// Names made of [A-Za-z0-9_.] print bare after their sigil; any other name prints quoted (%"a b").
// `//` starts a comment. parse(print(m)) == m holds for modules whose values are stored in definition
// order (arguments, then node results), as FunctionBuilder and the parser store them; other modules
// come back with their values renumbered into that order.
#pragma once

#include <string>
#include <string_view>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::ir {

std::string print_module(const Module& module);
std::string print_function(const Function& function);

// Errors name `source` and the line and column at fault.
Expected<Module> parse_module(std::string_view text, const std::string& source = "<ir>");

}  // namespace agentcompile::ir
