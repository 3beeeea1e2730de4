// The softmax family's record (plan/families/softmax.cpp, codegen/renderers/softmax.cpp): the region's
// row program around its softmax or log_softmax, and the rows' schedule.
#pragma once

#include "plan/families/row_program.h"

namespace agentcompile::plan {

struct SoftmaxSchedule {
  RowSchedule rows;
  bool cache = false;  // the row is kept in registers (read once); else streamed twice (not in the split form)
};

struct SoftmaxConfig final : FamilyConfig {
  RowProgram program;
  SoftmaxSchedule schedule;

  SoftmaxConfig(RowProgram p, SoftmaxSchedule s) : program(std::move(p)), schedule(s) {}
  Match match_view() const override { return row_program_match(program, "rows"); }
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.rows.fallback; }
};

}  // namespace agentcompile::plan
