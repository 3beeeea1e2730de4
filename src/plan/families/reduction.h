// The reduction family's record (plan/families/reduction.cpp, codegen/renderers/reduction.cpp): the
// region's row program ending in a reduction over the last axis, and the rows' schedule.
#pragma once

#include "plan/families/row_program.h"

namespace agentcompile::plan {

struct ReductionConfig final : FamilyConfig {
  RowProgram program;
  RowSchedule schedule;

  ReductionConfig(RowProgram p, RowSchedule s) : program(std::move(p)), schedule(s) {}
  Match match_view() const override { return row_program_match(program, std::string(ir::op_name(program.row_op()))); }
  ParamSet params_view() const override { return row_params_view(schedule); }
  bool fallback() const override { return schedule.fallback; }
};

}  // namespace agentcompile::plan
