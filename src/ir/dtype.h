// Element types of IR values and of stored tensors.
//
// Activations and weights use f32/f16/bf16/i32; bool (one byte, 0 or 1) is what comparisons return
// and masks are made of. Quantized types name how a GGUF tensor is stored on
// disk; the frontend dequantizes them before a tensor reaches the IR, so graphs never carry them as
// value types, but weight stores report them so `inspect` can say what the file held.
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
  kBool,
};

// "f32", "f16", "bf16", "i32", "i64", "bool", "q8_0", ...
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);

bool is_quantized(DType dtype);
bool is_float(DType dtype);

// Bytes per element for plain types; for quantized types, bytes per block (see block_elements).
size_t dtype_size(DType dtype);
// Elements per storage block: 1 for plain types, 32 or 256 for quantized ones.
size_t block_elements(DType dtype);
// Bytes needed to store `count` elements (count must be a multiple of block_elements for quant types).
size_t storage_bytes(DType dtype, int64_t count);

// IEEE half and bfloat16 conversions, round-to-nearest-even.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bf16_to_float(uint16_t bits);
uint16_t float_to_bf16(float value);

}  // namespace agentcompile::ir
