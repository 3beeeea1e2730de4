// The embedding family's record (plan/families/embedding.cpp, codegen/renderers/embedding.cpp): a
// row copy per token id out of a weight table, and the rows' schedule.
#pragma once

#include <cstdint>
#include <string>

#include "plan/families/row_geometry.h"

namespace agentcompile::plan {

struct EmbeddingMatch {
  ir::DType dtype = ir::DType::kF16;
  std::string table, ids, out;  // slots: the weight [V, H], the ids i32 [rows], the output [rows, H]
  int64_t V = 0, H = 0;
  int64_t rows_per_token = 0, rows_fixed = 0;  // rows = rows_per_token * T + rows_fixed
};

struct EmbeddingConfig final : FamilyConfig {
  EmbeddingMatch match;
  RowSchedule schedule;

  EmbeddingConfig(EmbeddingMatch m, RowSchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override { return row_params_view(schedule); }
  bool fallback() const override { return schedule.fallback; }
};

}  // namespace agentcompile::plan
