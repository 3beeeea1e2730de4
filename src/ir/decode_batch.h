// The batched-decode pass: derives `decode_batch` from a module's one-token `decode` function.
//
//   decode(%tokens: i32[1], %pos: i32[])                          -> (f32[1, V])
//   decode_batch(%tokens: i32[T], %pos: i32[T], %base: i32[T])    -> (f32[T, V])
//
// Row t of decode_batch is one token of its own sequence: at position pos[t], whose KV rows start at
// cache row base[t] (a slot's first row: slot * context when every sequence owns `context` rows of one
// cache of slots * context rows; the runner chooses). rope, kv_append and attention take their per-row
// form (ir/ops.h); everything else in a decoder is already row-wise, so its token dim (decode's static 1)
// becomes T. The same function runs a prompt chunk of one sequence (pos[t] = p + t, one base) or any mix
// of sequences' tokens in one call: T is "tokens in this call", as in prefill.
//
// Why a pass and not a builder: captured and hand-built models both reach the same decode IR
// (recognition raises captures to the builders' ops), so one rewrite of that IR serves both; a graph the
// pass cannot prove row-wise (a layout op that moves the token dim, a reduction across it, the position
// used outside rope/kv_append/attention) is an error naming the node, never a silent wrong function.
// Why a base row and not a slot index: the IR stays free of the slot count and the cache geometry (a
// paged cache would hand one base per block), and a kernel adds one integer.
#pragma once

#include <string>

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::ir {

inline constexpr const char* kDecodeBatchFunction = "decode_batch";

// The batched form of `module`'s function `from` (one token: arguments i32[1] ids and i32[] position),
// named `name`, verified. The module is not changed.
Expected<Function> derive_decode_batch(const Module& module, const std::string& from = "decode",
                                       const std::string& name = kDecodeBatchFunction);

// Appends derive_decode_batch(module) to the module unless a function of that name is already there.
Status add_decode_batch(Module& module);

}  // namespace agentcompile::ir
