// Reading an attention region for the attention families: its attention op (the region's last node)
// and, for a decode attention that opens with one (analysis/regions.h, "attention prologue"), the
// token's QK-norm / RoPE / KV append, as three streams into the attention:
//   q: in -> rmsnorm? -> rope? -> attention q
//   k: in -> rmsnorm? -> rope? -> kv_append -> attention k (the cache, with the new row)
//   v: in -> kv_append -> attention v
// The families record the prologue in their match as roles (q_in, k_in, v_in: the raw projections;
// q_norm, k_norm: weights; k, v: the cache states) and facts (prologue, qk_norm, rope, eps_bits and
// the rope_* bits the rope_kv family uses too), so codegen can render the same arithmetic.
#pragma once

#include <optional>
#include <string>

#include "plan/template_family.h"

namespace agentcompile::plan {

struct AttentionPrologue {
  std::string q_in, k_in, v_in;  // interface inputs [1, NH or KV, D]
  std::string q_norm, k_norm;    // weights [D]; empty without QK-norm
  std::string k_cache, v_cache;  // the states appended to ("state0", ...)
  std::string pos;               // the position input the rope and appends read
  double eps = 0;                // QK-norm epsilon
  const ir::Node* rope = nullptr;  // the query's rope (the key's has the same attributes); null: none
};

struct AttentionRegionView {
  const ir::Node* attention = nullptr;
  std::optional<AttentionPrologue> prologue;
};

// The region's attention and prologue, or nullopt with the reason in `why` (a region that is not
// an attention region, or whose ops before the attention are not a prologue this code reads).
std::optional<AttentionRegionView> read_attention_region(const RegionContext& ctx, std::string* why);

// Adds the prologue's roles and facts to a match whose "q", "k", "v" roles were set from the
// attention's operands: "q" becomes the raw query input, "k" and "v" the cache states.
void add_prologue_to_match(const AttentionPrologue& prologue, Match& match);

// What a kernel name adds for a match's prologue ("" without one): "_qknorm_rope_theta1000000",
// "_rope_theta500000_llama3", ...; the RoPE table is part of the source, so its base is spelled.
std::string prologue_name(const Match& match);

}  // namespace agentcompile::plan
