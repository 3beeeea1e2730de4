// Dequantization of GGUF tensor storage to f32, with ggml's block layouts.
#pragma once

#include <cstdint>

#include "agentcompile/status.h"
#include "ir/dtype.h"

namespace agentcompile::frontend {

// Converts `count` elements stored as `type` (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K) at `src`
// to f32 at `dst`. `src` must hold storage_bytes(type, count) bytes; `count` must be a multiple of the
// type's block size. The arithmetic is gguf-py's `gguf.quants.dequantize`, step for step in f32, so the
// results agree bit for bit.
Status dequantize(ir::DType type, const uint8_t* src, int64_t count, float* dst);

}  // namespace agentcompile::frontend
