// The reference attention family's record (plan/families/attention_reference.cpp,
// codegen/renderers/attention_reference.cpp) and its own question: why can it not implement a
// region? Its match answers yes or no; attention_reference_rejection says why not, so tests and
// reports can name the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/families/attention_prologue.h"
#include "plan/families/rope_kv.h"
#include "plan/template_family.h"

namespace agentcompile::plan {

// Largest head dimension the reference kernel takes (compiled and tested up to here; at 512 its
// tile is 8 keys of fp32 K and V in 48 KB of static shared memory).
constexpr int64_t kAttentionReferenceMaxHeadDim = 512;

struct AttentionReferenceMatch {
  ir::DType dtype = ir::DType::kF16;
  bool decode = false;     // one query token (variant "decode"), else T queries ("prefill")
  int64_t NH = 0, KV = 0, D = 0;
  int64_t tokens_static = 0;  // a static query count; 0: the T of the call
  float scale = 1.f;
  int64_t window = 0;      // 0: none
  std::string q, k, v, pos, o;  // slots; with a prologue q is the raw query input, k and v the caches
  std::string base;        // decode_batch's per-row form: each row's first cache row (pos is then per row too); "" otherwise
  std::optional<AttentionPrologue> prologue;
  int64_t prologue_vec = 0;  // elements per lane of the prologue's rope_kv kernel
};

struct AttentionReferenceSchedule {
  int64_t threads = 128;
  int64_t tile = 0;  // keys per pass through shared memory
};

struct AttentionReferenceConfig final : FamilyConfig {
  AttentionReferenceMatch match;
  AttentionReferenceSchedule schedule;

  AttentionReferenceConfig(AttentionReferenceMatch m, AttentionReferenceSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return true; }  // the one choice, the baseline of every attention region
};

// "" when attention_reference implements the region, otherwise the reason it does not, e.g.
// "head_dim 640 is outside 1..512, ..." or "i32 attention: the reference kernel takes f32, f16 and bf16 only".
std::string attention_reference_rejection(const RegionContext& ctx);

// A decode region that opens with its token's QK-norm / RoPE / KV append (attention_prologue.h) is
// two launches in this family: the rope_kv kernel, which rotates the query into the workspace and
// appends the key and value row, then the reference attention reading the query from there.
// The rope_kv configuration of the first launch (of a config with a prologue):
RopeKvConfig attention_reference_prologue(const AttentionReferenceConfig& reference);

}  // namespace agentcompile::plan
