// RoPE frequencies: fits the parametric form of an inverse-frequency table and verifies it.
//
// A captured rotary embedding carries its inv_freq table [D/2] as an inline f32 constant. The rope op
// takes either the parameters the table was computed from (attrs theta, scaling, factor,
// low_freq_factor, high_freq_factor, original_max_position: what the builders write) or the table
// itself (attr inv_freq). The fit:
//   - "none": inv_freq[i] = theta^(-2i/D). theta is estimated from several entries and each estimate is
//     rounded to 1..17 significant digits, simplest first.
//   - "llama3": the same theta (from the high-frequency entries, which llama3 leaves alone); factor from
//     the lowest frequency (base / table, rounded the same way); low/high_freq_factor from the values
//     configs use (1, 0.5, 2 and 4, 2, 8); original_max_position from powers of two and from what the
//     smoothed middle band implies.
// A candidate is accepted only if ir::kernels::rope_inv_freq reproduces EVERY entry within 1 float32
// ulp (torch's float pow and ours differ by one ulp at some entries: Qwen3's theta 1e6 table does at
// one). Nothing fits -> the exact table is kept as attr inv_freq.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

// The rope attributes for `table` (D = 2 * table.size()).
ir::Attrs fit_rope_frequencies(const std::vector<double>& table);

}  // namespace agentcompile::analysis::recognize
