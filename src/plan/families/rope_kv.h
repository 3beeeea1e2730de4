// The rope_kv family's record (plan/families/rope_kv.cpp, codegen/renderers/rope_kv.cpp): up to three
// streams of head rows, each normalized, rotated and/or appended to a cache. The attention reference
// family's prologue is one of its kernels too (attention_reference.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/families/rope_params.h"
#include "plan/template_family.h"

namespace agentcompile::plan {

struct RopeKvStream {
  std::string x;            // the input slot: [T, heads, D], or [T, heads*D] under a whole-projection norm
  std::string norm;         // the norm weight's slot; "" without a norm
  int64_t norm_width = 0;   // heads*D: the norm is over the token's whole projection; 0: per head
  std::string y;            // the output slot [T, heads, D]; "" when the stream is only appended
  std::string cache;        // the state slot [L, heads, D] the rows are appended to; "" without an append
  int64_t heads = 0;
  bool rope = false;
};

struct RopeKvMatch {
  ir::DType dtype = ir::DType::kF16;
  int64_t D = 0;
  std::vector<RopeKvStream> streams;  // 1 to 3
  std::string pos;                    // the position input: i32[], or i32[T] with `base` (decode_batch's per-row form)
  bool per_row = false;               // pos is i32[T]: each row its own sequence's position
  std::string base;                   // per-row form: each row's first cache row, i32[T] ("" when nothing is appended)
  std::optional<int64_t> tokens;      // a static token count; nullopt: T
  std::optional<double> eps;          // the norms' epsilon
  bool norm_f32 = false;              // f32 norm weights with 16-bit rows (Gemma's 1 + w)
  std::optional<RopeSpec> rope;       // the rotation of the streams that rotate

  int64_t rows() const;  // head rows per token, over all streams
};

struct RopeKvSchedule {
  int64_t vec = 2;       // elements per lane
  int64_t threads = 128;
  bool fallback = false;
};

struct RopeKvConfig final : FamilyConfig {
  RopeKvMatch match;
  RopeKvSchedule schedule;

  RopeKvConfig(RopeKvMatch m, RopeKvSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.fallback; }
};

// The kernel's launch: one row per (token, head).
Launch rope_kv_launch(const RopeKvConfig& config, const std::string& kernel);

}  // namespace agentcompile::plan
