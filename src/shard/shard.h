// Tensor-parallel sharding: a module and (ranks N, rank r) -> the module rank r runs (Megatron-LM's
// scheme, on the recognized semantic graph).
//
// Roles are found from the graph's structure, never from parameter names (shard/roles.h):
//   - a row-parallel linear is one whose input, walked back through pointwise ops, views, casts, RoPE,
//     per-head norms, KV appends and attention, comes only from other linears; those linears are its
//     column-parallel producers. In a decoder this finds q/k/v -> attention -> o_proj and
//     gate/up -> SiLU * mul -> down, and the same shapes in a captured graph or a GELU MLP.
//   - the LM head (vocab-parallel) is the linear whose result reaches a function result through casts
//     and views only.
//   - everything else (embedding, norms, the residual stream) is replicated: every rank computes it.
// The rank module (shard/rewrite.cpp):
//   - column-parallel weights (and biases) keep rows [r*n/N, (r+1)*n/N) of their n output rows; the
//     values they produce are split along their last axis, which reshapes carry to the head axis
//     (heads and kv heads must divide by N: an error names the reshape and the counts otherwise);
//     every state a split value is appended to holds only the rank's kv heads, [L, KV/N, D].
//   - row-parallel weights keep columns [r*K/N, (r+1)*K/N); the partial product is summed over the
//     ranks by a new `all_reduce` node right after the linear (a bias is added once, after the sum).
//   - the LM head's rows are split the same way (vocab-parallel) and its logits joined by an
//     `all_gather` along the vocab axis before anything else reads them. Gathered, not reduced to a
//     distributed argmax: every sampler (temperature, top-k/top-p, penalties, logprobs) then runs
//     unchanged on the whole row, and the row is small (V * 2 bytes per token, ~300 KB for a 152k
//     vocab, a few microseconds over NVLink against milliseconds of weight streaming).
//   - the embedding is replicated (one row is read per token, so its cost is memory, not time; a
//     vocab-parallel embedding would add a collective per step).
//   - an LM head tied to the embedding reads its rows through a new alias parameter
//     (`<name>.vocab_part`), so the whole table stays and no byte is stored twice.
//   - a fused parameter (Phi-3's qkv_proj, gate_up_proj read through row aliases) keeps, for each of
//     its aliases, that alias's rank rows: several ranges of one checkpoint tensor.
// Every sharded parameter records its ranges of the checkpoint tensor (ir::ParamDecl::shard_ranges),
// so a rank loads only those bytes. A value split over ranks that reaches an op the scheme cannot
// split (a norm over the split axis, a slice of it, a gather, ...) is an error naming that node.
#pragma once

#include "agentcompile/status.h"
#include "ir/graph.h"

namespace agentcompile::shard {

struct ShardOptions {
  int ranks = 1;
  int rank = 0;
};

// The module rank `options.rank` of `options.ranks` runs. ranks == 1 gives the same form (collectives
// of one rank, which are the identity, and parameters whose one range is the whole tensor): the
// tensor-parallel path with nothing split, which one GPU can check against the plain module.
Expected<ir::Module> shard_module(const ir::Module& module, const ShardOptions& options);

}  // namespace agentcompile::shard
