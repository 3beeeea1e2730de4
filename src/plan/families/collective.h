// The collective family's record (plan/families/collective.cpp, codegen/renderers/collective.cpp): a
// collective region of a sharded module (all_reduce or all_gather, shard/shard.h) as one NCCL call on
// the region's stream, which the runtime issues through the rank's communicator (gpu/nccl.h) and a
// CUDA graph captures like any launch.
//
// The serialized view: variant "all_reduce" | "all_gather"; facts ranks, row (elements per token row
// of the operand), tokens (0 for T); roles in, out.
#pragma once

#include <cstdint>
#include <string>

#include "plan/template_family.h"

namespace agentcompile::plan {

struct CollectiveMatch {
  ir::OpKind op = ir::OpKind::kAllReduce;
  ir::DType dtype = ir::DType::kBF16;
  std::string in, out;  // slots
  int64_t ranks = 1;
  int64_t row = 0;      // elements of one token's row of the operand
  int64_t tokens = 0;   // static token rows; 0: T
};

struct CollectiveConfig final : FamilyConfig {
  CollectiveMatch match;

  explicit CollectiveConfig(CollectiveMatch m) : match(std::move(m)) {}
  Match match_view() const override;
  ParamSet params_view() const override { return {{"fallback", 1}}; }
  bool fallback() const override { return true; }
};

}  // namespace agentcompile::plan
