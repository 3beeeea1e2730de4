// Reading an attention region for the attention families: its attention op (the region's last node)
// and, for a decode attention that opens with one (analysis/regions.h, "attention prologue"), the
// token's QK-norm / RoPE / KV append, as three streams into the attention:
//   q: in -> rmsnorm? -> rope? -> attention q
//   k: in -> rmsnorm? -> rope? -> kv_append -> attention k (the cache, with the new row)
//   v: in -> kv_append -> attention v
// The QK-norm is per head (weight [D], Qwen3, Gemma-3) or over the token's whole projection before
// its head reshape (weight [H*D], OLMo-2: the stream's input is then [1, H*D] and the rope reads the
// norm through the reshape); its weights are the attention's dtype or f32 (Gemma's 1 + w).
// The families keep the prologue in their match (AttentionPrologue below) and serialize it as roles
// (q, k_new, v_new: the raw projections; q_norm, k_norm: weights; k, v: the cache states) and facts
// (prologue, qk_norm, rope, eps_bits, the rope facts of plan/families/rope_params.h the rope_kv
// family uses too, and where they apply q_norm_width / k_norm_width = H*D and norm_f32).
#pragma once

#include <optional>
#include <string>

#include "plan/families/rope_params.h"
#include "plan/template_family.h"

namespace agentcompile::plan {

struct AttentionPrologue {
  std::string q_in, k_in, v_in;  // interface inputs [1, NH or KV, D]
  std::string q_norm, k_norm;    // weights [D] (or [H*D]); empty without QK-norm
  int64_t q_norm_width = 0;      // NH*D: the query's norm is over its whole projection; 0: per head
  int64_t k_norm_width = 0;      // KV*D likewise for the key
  bool norm_f32 = false;         // f32 norm weights with 16-bit activations
  std::string k_cache, v_cache;  // the states appended to ("state0", ...)
  std::string pos;               // the position input the rope and appends read
  double eps = 0;                // QK-norm epsilon
  std::optional<RopeSpec> rope;  // the query's rope (the key's has the same attributes); nullopt: none
};

struct AttentionRegionView {
  const ir::Node* attention = nullptr;
  std::optional<AttentionPrologue> prologue;
};

// The region's attention and prologue, or nullopt with the reason in `why` (a region that is not
// an attention region, or whose ops before the attention are not a prologue this code reads).
std::optional<AttentionRegionView> read_attention_region(const RegionContext& ctx, std::string* why);

// The serialized view of a prologue: sets the roles "q" (the raw query input), "k" and "v" (the
// cache states) and the others, and the prologue's facts.
void add_prologue_to_match(const AttentionPrologue& prologue, Match& match);

// What a kernel name adds for a prologue: "_qknorm_rope_theta1000000_append",
// "_rope_theta500000_llama3_append", "_qknormfull_rope_theta500000_append",
// "_qknorm_wf32_rope_invf1a2b3c4d_append", ...; the RoPE table is part of the source, so its form is
// spelled (rope_params.h, rope_name).
std::string prologue_name(const AttentionPrologue& prologue);

}  // namespace agentcompile::plan
