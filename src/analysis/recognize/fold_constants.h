// Constant folding of small constant/arange-only arithmetic, used by the simplify pass.
//
// A node whose operands are all constants (or aranges of a static length) and whose result is static
// with at most kMaxFoldedElements elements is evaluated here and replaced by one constant node. Values
// are computed as torch computes them for the result's dtype: float ops in float32 and rounded to
// f16/bf16 when the result has that dtype, i32 ops in 32-bit integers (division truncates), bools as 0/1.
// Ops outside the folded set (matmuls, reductions, gathers, anything with a side effect) are left alone,
// and so are views (reshape, view, broadcast) of an arange: kernels compute an arange where they read it,
// through the view's strides, while a dense constant is data they cannot inline. Folding sees through
// such views, so arithmetic on them still folds, unless it broadcasts an arange into more elements
// than it has (a triangular mask's comparison of a row and a column of indices): kernels compute that
// where they read it, at any size.
#pragma once

#include <optional>

#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

constexpr int64_t kMaxFoldedElements = 4096;

// The attributes of the constant node that replaces `node` (operands are values of `function`), or
// nothing when the node is not foldable.
std::optional<ir::Attrs> fold_to_constant(const ir::Function& function, const ir::Node& node,
                                          const ir::TensorType& result_type);

}  // namespace agentcompile::analysis::recognize
