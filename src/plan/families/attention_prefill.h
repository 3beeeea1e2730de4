// The prefill attention family's record (plan/families/attention_prefill.cpp,
// codegen/renderers/attention_prefill.cpp): T queries from position pos, causal, GQA, optionally a
// sliding window; the mma kernel's tiles or the SIMT fallback.
#pragma once

#include <cstdint>
#include <string>

#include "plan/template_family.h"

namespace agentcompile::plan {

struct AttentionPrefillMatch {
  ir::DType dtype = ir::DType::kF16;
  int64_t NH = 0, KV = 0, D = 0;
  float scale = 1.f;
  int64_t window = 0;  // 0: none
  std::string q, k, v, pos, o;  // slots: q, o [T, NH, D]; k, v [L, KV, D]; pos []
};

struct AttentionPrefillSchedule {
  bool simt = false;  // the SIMT fallback (one warp per query row); else the mma kernel's tiles
  int64_t block_m = 0, block_n = 0, warps = 4, stages = 0;
};

struct AttentionPrefillConfig final : FamilyConfig {
  AttentionPrefillMatch match;
  AttentionPrefillSchedule schedule;

  AttentionPrefillConfig(AttentionPrefillMatch m, AttentionPrefillSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.simt; }
};

}  // namespace agentcompile::plan
