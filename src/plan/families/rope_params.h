// The rotary embedding of a rope op as a typed record, shared by the families that rotate (rope_kv and
// the attention prologue) and by codegen's inv_freq table (codegen/renderers/rope_table.cpp).
//
// A rope op gives its inverse frequencies either parametrically (attrs theta, scaling "none" or
// "llama3", factor, ...) or as an explicit table (attr inv_freq, D/2 floats used as f32), and may
// scale cos and sin (attr scale, default 1). Its serialized form, as match facts:
//   rope_theta_bits, rope_llama3, rope_factor_bits, rope_low_freq_factor_bits,
//   rope_high_freq_factor_bits, rope_original_max_position_bits   the parametric form (double bits)
//   rope_table = D/2, rope_inv_freq<i> = the f32 bits of entry i     the table form
//   rope_scale_bits = the f32 bits of scale                         only where scale != 1
// Kernel names spell the form: "theta500000_llama3", or "invf" and 8 hex digits of the table's
// digest, then "_sc" and the scale's bits where it is not 1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "plan/candidate.h"

namespace agentcompile::plan {

struct RopeSpec {
  std::optional<std::vector<float>> table;  // the table form's inverse frequencies; nullopt: parametric
  double theta = 10000.0;
  bool llama3 = false;  // llama3 scaling (else none)
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position = 8192.0;
  float scale = 1.f;  // the factor on cos and sin
};

// Whether two rope ops rotate alike: the same inverse frequencies, given the same way, and scale.
bool same_rope(const ir::Node& a, const ir::Node& b);

// The spec of `rope`; nullopt with why in `why` where the kernels cannot rotate alike (a scaling
// other than none and llama3).
std::optional<RopeSpec> rope_spec(const ir::Node& rope, std::string* why);

// Adds the facts of `rope` to `match` (the serialized view).
void add_rope_facts(const RopeSpec& rope, Match& match);

// The inverse frequencies [D/2] in f32: the table's entries, or the interpreter's own computation of
// the parametric form (ir::kernels::rope_inv_freq).
std::vector<float> rope_inv_freq_of(const RopeSpec& rope, int64_t head_dim);

// "theta1000000", "theta500000_llama3", "invf1a2b3c4d", each followed by "_sc<bits>" when scaled.
std::string rope_name(const RopeSpec& rope);

// A comment line for generated sources: "theta 500000, scaling llama3" or "table (invf1a2b3c4d)".
std::string rope_description(const RopeSpec& rope);

// Lanes of one head row in the rope_kv kernel (src/kernels/rope_kv.cuh) at VEC elements per lane:
// D/2/VEC rounded up to a power of two (the lanes past D/2/VEC idle, e.g. 6 of 8 at D = 96, VEC = 8),
// or 0 when VEC does not divide D/2 or a row would need more than a warp.
int64_t rope_row_lanes(int64_t head_dim, int64_t vec);

}  // namespace agentcompile::plan
