// The decode attention family's record (plan/families/attention_decode.cpp,
// codegen/renderers/attention_decode.cpp): one query token over the KV cache, GQA, optionally a
// sliding window and the token's QK-norm / RoPE / KV append first (attention_prologue.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/families/attention_prologue.h"
#include "plan/template_family.h"

namespace agentcompile::plan {

struct AttentionDecodeMatch {
  ir::DType dtype = ir::DType::kF16;
  int64_t NH = 0, KV = 0, D = 0;  // query heads, kv heads, head dim
  float scale = 1.f;
  int64_t window = 0;             // a sliding window of keys; 0: none
  // Slots: the query [1, NH, D] (with a prologue the raw query input), the caches [L, KV, D], the
  // position and the output [1, NH, D].
  std::string q, k, v, pos, out;
  // decode_batch's per-row form (ir/decode_batch.h): each row's first cache row [T], with q and out
  // [T, NH, D] and pos [T] (each row one query of its own sequence); "" for the one-token form.
  std::string base;
  std::optional<AttentionPrologue> prologue;

  int64_t group() const { return NH / KV; }
  bool rows() const { return !base.empty(); }
  bool whole_norm() const { return prologue && prologue->q_norm_width > 0; }  // QK-norms over the projections
};

struct AttentionDecodeSchedule {
  int64_t threads = 128, unroll = 1;
  bool prefetch = false;
  int64_t chunk = 0;    // keys per split at least (0 for one split)
  int64_t splits = 1;   // 1: the single launch
  bool cluster = false; // the splits of a kv head combine inside one launch (sm_90+)
  bool fallback = false;
};

struct AttentionDecodeConfig final : FamilyConfig {
  AttentionDecodeMatch match;
  AttentionDecodeSchedule schedule;

  AttentionDecodeConfig(AttentionDecodeMatch m, AttentionDecodeSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.fallback; }
  // The two-launch split: the main launch writes partials to the workspace, a second combines them.
  bool partials() const { return schedule.splits > 1 && !schedule.cluster; }
};

}  // namespace agentcompile::plan
