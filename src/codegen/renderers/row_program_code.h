// Device code for row programs (plan/families/row_program.h): the `Program` struct the row engines
// of rowwise.cuh call (load / pre / post / store), written as straight-line typed code from the
// program's ops, and the wrapper lines that bind it to ac::RegionArgs.
#pragma once

#include <string>

#include "plan/families/row_program.h"

namespace agentcompile::codegen {

// `struct Program { ... };` for VEC columns per chunk. Memory loads of slot `provided` (a GEMM's
// product, which a fused GEMM has in registers) are neither bound nor read by load(): the caller
// fills their Chunk arrays before pre().
// With `fast_math`, expm1, sigmoid and erf take their shorter forms (src/kernels/fast_math.cuh, which the
// caller includes): for programs whose results are stored in 16 bits.
std::string render_row_program(const plan::RowProgram& program, int vec, const std::string& provided = "", bool fast_math = false);
// Statements that fill a Program named `var` from the wrapper's `a` (one per line, indented 2).
std::string render_program_binding(const plan::RowProgram& program, const std::string& var, const std::string& provided = "");
// The wrapper's row count: "<rows_per_token>LL * a.T + <rows_fixed>LL".
std::string rows_expression(int64_t rows_per_token, int64_t rows_fixed);
// The ac::RowReduction of a reduction op (reduction.cuh): "ac::kRowSum", "ac::kRowArgmin", ...
const char* row_reduction_enum(ir::OpKind op);

}  // namespace agentcompile::codegen
