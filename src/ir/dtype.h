// Element types of IR values and of stored tensors.
//
// Activations and weights use f32/f16/bf16/i32; bool (one byte, 0 or 1) is what comparisons return
// and masks are made of. Quantized types are weight formats (ir/quant.h defines each one's bytes and
// its dequantization): GGUF's blocks as llama.cpp stores them (q8_0 ... q6_k), and the formats a
// Hugging Face checkpoint is quantized to at compile time (i8_*: int8 per output channel; i4gG*:
// int4 in groups of G along K, `z` with zero points; the suffix names the scales' dtype). A
// quantized type is only ever a parameter's type, and such a parameter is only read as the weight of
// a linear or the table of an embedding (the verifier holds graphs to that).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace agentcompile::ir {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kI32,
  kI64,
  kQ8_0,
  kQ4_0,
  kQ4_1,
  kQ4_K,
  kQ6_K,
  kQ5_K,
  kI8_F16,
  kI8_BF16,
  kI4G32_F16,
  kI4G32_BF16,
  kI4G64_F16,
  kI4G64_BF16,
  kI4G128_F16,
  kI4G128_BF16,
  kI4G32Z_F16,
  kI4G32Z_BF16,
  kI4G64Z_F16,
  kI4G64Z_BF16,
  kI4G128Z_F16,
  kI4G128Z_BF16,
  kBool,
  // After kBool so the values before it (in hashes of generated programs) stay as they were.
  kI8G32_F16,   // GGUF Q8_0's values as a row format (ir/quant.h)
  kI4G32M_F16,  // GGUF Q4_1's values as a row format (the last: ir/verifier.cpp checks against it)
};

// "f32", "f16", "bf16", "i32", "i64", "bool", "q8_0", ...
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);

bool is_quantized(DType dtype);
bool is_float(DType dtype);

// Bytes per element for plain types; for GGUF block types, bytes per block (see block_elements); 0 for
// the row formats (i8_*, i4*), whose rows carry their scales (ir/quant.h: row_bytes).
size_t dtype_size(DType dtype);
// Elements per storage block: 1 for plain types, 32 or 256 for GGUF blocks, the group size for i4*
// formats; 0 for i8_* (one scale per row: a block is the whole row).
size_t block_elements(DType dtype);
// Bytes needed to store `count` elements of a plain or GGUF block type (count a multiple of
// block_elements); the row formats need the row length too (ir/quant.h: tensor_bytes).
size_t storage_bytes(DType dtype, int64_t count);

// IEEE half and bfloat16 conversions, round-to-nearest-even.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

}  // namespace agentcompile::ir
