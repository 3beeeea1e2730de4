// Small pattern-matching helpers over one function: producers, constants, commutative operands, use
// counts, weight-only values and layout chains. The recognition rules are written with these.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "analysis/use_def.h"
#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

// The node that defines `value`, or nullptr for an argument (or an out-of-range id).
const ir::Node* producer(const ir::Function& f, ir::ValueId value);
// The defining node when it has op `op`, else nullptr.
const ir::Node* producer_of(const ir::Function& f, ir::ValueId value, ir::OpKind op);

// A constant whose elements are all one number (a scalar, a splat or a list of equal values), seen
// through reshapes and broadcasts: its value.
std::optional<double> splat_constant(const ir::Function& f, ir::ValueId value);
// True when `value` is such a constant equal to `expected` within `ulps` units in the last place of
// float32 (constants reach us as f32 tensors or as Python doubles).
bool is_constant_near(const ir::Function& f, ir::ValueId value, double expected, int ulps = 4);
bool near_f32(double a, double b, int ulps);

// The operands of a binary node of op `op` that defines `value`, as {x, other} where `pick(x)`
// holds for x; tries both orders for commutative ops. Empty when nothing matches.
template <typename Pick>
std::optional<std::pair<ir::ValueId, ir::ValueId>> commuted(const ir::Function& f, ir::ValueId value, ir::OpKind op,
                                                           Pick pick) {
  const ir::Node* node = producer_of(f, value, op);
  if (!node || node->operands.size() != 2) return std::nullopt;
  if (pick(node->operands[0])) return std::make_pair(node->operands[0], node->operands[1]);
  if (pick(node->operands[1])) return std::make_pair(node->operands[1], node->operands[0]);
  return std::nullopt;
}

// Readers of a value (nodes, plus one for each time it is returned).
int use_count(const UseDef& uses, ir::ValueId value);
bool single_use(const UseDef& uses, ir::ValueId value);

// Per value: computed only from weights and constants (and static aranges), never from an argument
// or a state. Side effects are never weight-only.
std::vector<bool> weight_only_values(const ir::Function& f);

// Sees through casts between float dtypes (and casts to the same dtype); returns the first value
// that is not such a cast.
ir::ValueId strip_float_casts(const ir::Function& f, ir::ValueId value);
// Sees through reshape, view and casts of integer values; for index arithmetic (positions).
ir::ValueId strip_index_layout(const ir::Function& f, ir::ValueId value);

// The reductions that a reduction of parts' reductions computes again (up to float rounding): sums,
// maxima, minima and products regroup; a mean is the mean of equal-sized parts' means. Not argmax/argmin.
bool regroups(ir::OpKind op);

// A float of fewer than 32 bits (f16, bf16): sums of it are kept in f32 and rounded once.
bool is_narrow_float(ir::DType dtype);

// Normalized axis (negative counts from the end) or -1 when out of range.
int64_t normalize_axis(int64_t axis, size_t rank);
// The dims of a shape that are not a static 1, in order.
ir::Shape non_unit_dims(const ir::Shape& shape);
bool is_unit(const ir::Dim& dim);

// positions = pos + arange(T) (either order; through index casts and reshapes), or arange(T) alone:
// the scalar i32 `pos` (kNoValue for a bare arange, meaning position 0) and the length T.
struct Positions {
  ir::ValueId pos = ir::kNoValue;
  ir::Dim length;
};
std::optional<Positions> match_positions(const ir::Function& f, ir::ValueId value);

}  // namespace agentcompile::analysis::recognize
