// The column family's record (plan/families/columns.cpp, codegen/renderers/columns.cpp): the region's
// row program in the column form (a reduction or scan along a leading axis) and its schedule.
#pragma once

#include "plan/families/row_program.h"

namespace agentcompile::plan {

struct ColumnSchedule {
  int64_t threads = 256;
  int64_t vec = 1;    // adjacent columns per thread
  int64_t split = 0;  // > 0: the axis split across SPLIT blocks, partials combined by a second launch
  bool fallback = false;
};

struct ColumnConfig final : FamilyConfig {
  RowProgram program;
  ColumnSchedule schedule;

  ColumnConfig(RowProgram p, ColumnSchedule s) : program(std::move(p)), schedule(s) {}
  Match match_view() const override { return row_program_match(program, std::string(ir::op_name(program.row_op()))); }
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.fallback; }
};

}  // namespace agentcompile::plan
