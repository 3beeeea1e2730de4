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
//   - per-row positions and bases (decode_batch: rope, kv_append and attention in their per-row form):
//     the cache's L rows split into one slot of L / T rows per row, each row in a slot of its own
//     (a shuffle of the slots), at a position inside it;
//   - products (cumprod, reduce_prod): exp(x / 50) for x clipped to [-1, 1], a random walk in log
//     space with no drift, so products of tens of thousands of terms stay finite (in f16 too) and
//     away from 0.
// Readers are seen through views and through ops that keep a positive value positive (a cast, an
// add of a constant >= 0, a product or quotient with a constant > 0: the epsilon before a square
// root); an input that reaches log through other ops is drawn as usual.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::tune {

enum class Domain { kAny, kIndex, kDistinctIndex, kPositive, kNonzero, kBounded, kProduct, kRowPosition, kRowBase };

struct InputDomain {
  Domain domain = Domain::kAny;
  int32_t limit = 0;  // indices: values in [0, limit)
};

// One per argument of `function` (the extracted region's "region").
std::vector<InputDomain> input_domains(const ir::Function& function);

// Maps drawn values into `domain` (in place); float values only (indices are drawn by limit).
void apply_domain(const InputDomain& domain, std::vector<float>& values);

}  // namespace agentcompile::tune
