// The RoPE inverse-frequency table that rope_kv and the attention prologue render.
#pragma once

#include <cstdint>
#include <string>

#include "plan/families/rope_params.h"

namespace agentcompile::codegen {

// `__device__ const float ac_inv_freq[D/2]` of a rope spec: the rope op's own table, or for the
// parametric form the interpreter's values (ir::kernels::rope_inv_freq, float32 and llama3 scaling as
// transformers computes them), in exact hexadecimal literals.
std::string rope_inv_freq_table(const plan::RopeSpec& rope, int64_t head_dim);

}  // namespace agentcompile::codegen
