// The prefill GEMM family's record (plan/families/gemm.cpp, codegen/renderers/gemm.cpp): a matmul
// region over T tokens or a static row count with a fixed epilogue (matmul_match.h), or one linear
// whose pointwise epilogue is a generated row program (matmul_general.h, "program"), and its tiles.
#pragma once

#include <cstdint>
#include <variant>

#include "plan/families/matmul_general.h"
#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

struct GemmMatch {
  std::variant<MatmulMatch, GeneralMatmul> matmul;  // a fixed epilogue, or the "program" variant
  int64_t M = 0;                                    // a static row count; 0: T rows

  const MatmulMatch* fixed() const { return std::get_if<MatmulMatch>(&matmul); }
  const GeneralMatmul* program() const { return std::get_if<GeneralMatmul>(&matmul); }
  ir::DType dtype() const;
  ir::DType out_dtype() const;
  int64_t N() const;  // the output columns (the gate's alone for gate_up)
  int64_t K() const;
  int64_t mats() const;  // weight matrices a block multiplies: 2 for gate_up
};

struct GemmTile {
  bool simt = false;  // the SIMT fallback (fp32 FMA, TM x TN per thread); else the mma kernel
  int64_t bm = 64, bn = 64, bk = 32;
  int64_t wm = 2, wn = 2, stages = 3;  // mma: warps along M and N, cp.async stages
  int64_t tm = 4, tn = 4;              // simt: outputs per thread
};

struct GemmConfig final : FamilyConfig {
  GemmMatch match;
  GemmTile tile;

  GemmConfig(GemmMatch m, GemmTile t) : match(std::move(m)), tile(t) {}
  Match match_view() const override;
  ParamSet params_view() const override;
  bool fallback() const override { return tile.simt; }
};

}  // namespace agentcompile::plan
