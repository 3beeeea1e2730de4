// The elementwise family's record (plan/families/elementwise.cpp, codegen/renderers/elementwise.cpp):
// the region's pointwise row program and its schedule.
#pragma once

#include "plan/families/row_program.h"

namespace agentcompile::plan {

struct ElementwiseSchedule {
  int64_t threads = 256;
  int64_t vec = 1;     // columns per access
  int64_t unroll = 1;  // vectors per thread
  bool fallback = false;
  // expm1, sigmoid and erf in their shorter forms (src/kernels/fast_math.cuh): offered where every result
  // is stored in 16 bits.
  bool fast_math = false;
};

struct ElementwiseConfig final : FamilyConfig {
  RowProgram program;
  ElementwiseSchedule schedule;

  ElementwiseConfig(RowProgram p, ElementwiseSchedule s) : program(std::move(p)), schedule(s) {}
  Match match_view() const override { return row_program_match(program, "chain"); }
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.fallback; }
};

}  // namespace agentcompile::plan
