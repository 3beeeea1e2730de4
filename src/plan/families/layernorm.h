// The LayerNorm family's record (plan/families/layernorm.cpp, codegen/renderers/layernorm.cpp): the
// region's row program around its layer_norm, and the rows' schedule.
#pragma once

#include "plan/families/row_program.h"

namespace agentcompile::plan {

struct LayerNormSchedule {
  RowSchedule rows;
  bool cache = false;  // the row is kept in registers (read once); else streamed twice (not in the split form)
};

struct LayerNormConfig final : FamilyConfig {
  RowProgram program;
  LayerNormSchedule schedule;

  LayerNormConfig(RowProgram p, LayerNormSchedule s) : program(std::move(p)), schedule(s) {}
  Match match_view() const override { return row_program_match(program, "rows"); }
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.rows.fallback; }
};

}  // namespace agentcompile::plan
