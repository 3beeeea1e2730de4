// The RMSNorm family's record (plan/families/rmsnorm.cpp, codegen/renderers/rmsnorm.cpp): the
// region's row program, plain (the fixed kernel) or fused (the generated program), and its rows'
// schedule.
#pragma once

#include "plan/families/row_program.h"

namespace agentcompile::plan {

struct RmsNormMatch {
  RowProgram program;
  bool plain = false;  // x, w and y of one dtype and nothing else: the fixed kernel ("plain", else "fused")
};

struct RmsNormConfig final : FamilyConfig {
  RmsNormMatch match;
  RowSchedule schedule;

  RmsNormConfig(RmsNormMatch m, RowSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override { return row_program_match(match.program, match.plain ? "plain" : "fused"); }
  ParamSet params_view() const override { return row_params_view(schedule); }
  bool fallback() const override { return schedule.fallback; }
};

}  // namespace agentcompile::plan
