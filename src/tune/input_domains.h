// What values a region's inputs may take in validation cases, read off the ops that consume them.
//
// Admission compares a candidate with the interpreter and NaN never passes, so an input is drawn
// inside the domain of the ops that read it, where one op says so:
//   - indices: an embedding's ids below its vocabulary, index_select / gather indices below the
//     indexed axis, index_copy indices below the state's axis and all distinct (a repeated index
//     would make the write order matter); other i32 inputs in [-64, 64);
//   - positive (log, sqrt, rsqrt, log1p, the base of pow): |x| + 1/16;
//   - away from zero (reciprocal, a divisor): |x| + 1/2 with x's sign;
//   - bounded (exp, expm1: |x| <= 8, so f16 results stay finite);
//   - products (cumprod, reduce_prod): 1/2 + min(|x|, 1), so long products neither overflow nor
//     reach 0 too soon to test anything.
// Only direct readers are seen (through views); an input that reaches log through other ops is drawn
// as usual.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::tune {

enum class Domain { kAny, kIndex, kDistinctIndex, kPositive, kNonzero, kBounded, kProduct };

struct InputDomain {
  Domain domain = Domain::kAny;
  int32_t limit = 0;  // indices: values in [0, limit)
};

// One per argument of `function` (the extracted region's "region").
std::vector<InputDomain> input_domains(const ir::Function& function);

// Maps drawn values into `domain` (in place); float values only (indices are drawn by limit).
void apply_domain(const InputDomain& domain, std::vector<float>& values);

}  // namespace agentcompile::tune
