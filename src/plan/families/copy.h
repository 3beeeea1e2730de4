// The copy family's record (plan/families/copy.cpp, codegen/renderers/copy.cpp): one layout op that
// moves data (transpose, concat, flip, a slice of an inner axis) as an affine map from each output
// element to one source element per operand ("piece"), and its schedule.
//
// The serialized view: facts rank, d<j> (output dims; d0 = 0 for T), axis, pieces, and per piece
// lo<i>, hi<i> (its range on `axis`), base<i>, s<i>.<j>, or fill<i> (the bits of a double: a
// one-value constant operand, written, not read); roles src<i> (operand slots) and out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/template_family.h"

namespace agentcompile::plan {

struct CopyPiece {
  std::string slot;             // the operand's slot; "" for a fill
  std::optional<double> fill;   // a one-value constant operand: written, not read
  int64_t base = 0;             // the source offset of output element 0
  std::vector<int64_t> strides; // per output dim (negative for a flip); empty for a fill
  int64_t lo = 0, hi = 0;       // the range of the concat axis the piece covers (0, 0 without a concat)
};

struct CopyMatch {
  ir::OpKind op = ir::OpKind::kTranspose;  // the variant
  ir::DType dtype = ir::DType::kF16;
  std::string out;              // the output's slot
  std::vector<int64_t> dims;    // the output's dims; dims[0] = 0 for T
  int64_t axis = -1;            // the concat axis; -1 without a concat
  std::vector<CopyPiece> pieces;
};

struct CopySchedule {
  bool tiled = false;  // the transpose of the innermost axis through shared-memory tiles
  int64_t vec = 1;     // output elements per thread (the elementwise form)
  int64_t threads = 256;
  bool fallback = false;
};

struct CopyConfig final : FamilyConfig {
  CopyMatch match;
  CopySchedule schedule;

  CopyConfig(CopyMatch m, CopySchedule s) : match(std::move(m)), schedule(s) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return schedule.fallback; }
};

// The output dim P of a tiled transpose (the one that reads the source's innermost axis); -1 when
// the copy has no tiled form.
int64_t copy_tiled_dim(const CopyMatch& match);

}  // namespace agentcompile::plan
