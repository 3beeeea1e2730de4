// The gather family's record (plan/families/gather.cpp, codegen/renderers/gather.cpp): index_select,
// gather and index_copy viewed as [outer, N, inner] around the indexed axis, and the schedule.
//
// The serialized view: facts rank, d<j> (the iterated shape: the output, or index_copy's source; d0 =
// 0 for T), axis, xdim (the indexed axis's length), xs<j> (gather: x's strides); roles x / src,
// idx, out / state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/template_family.h"

namespace agentcompile::plan {

struct GatherMatch {
  ir::OpKind op = ir::OpKind::kIndexSelect;  // index_select (an embedding of a non-weight too), gather or index_copy
  ir::DType dtype = ir::DType::kF16;
  std::string data;          // x (the gathered-from table), or index_copy's src
  std::string idx;           // the indices
  std::string dest;          // the output, or index_copy's state
  std::vector<int64_t> dims; // the iterated shape; dims[0] = 0 for T
  int64_t axis = 0;
  int64_t xdim = 0;          // the indexed axis's length in x (or the state)
  std::vector<int64_t> x_strides;  // gather: x's strides per dim

  int64_t inner() const;     // elements after the axis
};

struct GatherSchedule {
  int64_t vec = 1;
  int64_t threads = 256;
  bool fallback = false;
};

struct GatherConfig final : FamilyConfig {
  GatherMatch match;
  GatherSchedule schedule;

  GatherConfig(GatherMatch m, GatherSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.fallback; }
};

}  // namespace agentcompile::plan
