// Element types: names, sizes and scalar conversions.
#include "ir/dtype.h"

#include <cmath>
#include <cstring>

namespace agentcompile::ir {

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t block_bytes;
  size_t block_elems;
  bool quantized;
};
// Block layouts follow ggml: Q8_0 = f16 scale + 32 int8; Q4_0 = f16 scale + 16 bytes of nibbles;
// Q4_1 = f16 scale + f16 min + 16 bytes; Q4_K = 2 f16 + 12 scale bytes + 128 nibble bytes per 256;
// Q5_K = Q4_K's + 32 bytes of fifth bits; Q6_K = 128 low bytes + 64 high bytes + 16 int8 scales + f16
// per 256. The row formats (i8_*, i4*) have no fixed block bytes: ir/quant.h lays out their rows.
constexpr DTypeInfo kInfos[] = {
    {DType::kF32, "f32", 4, 1, false},
    {DType::kF16, "f16", 2, 1, false},
    {DType::kBF16, "bf16", 2, 1, false},
    {DType::kI32, "i32", 4, 1, false},
    {DType::kI64, "i64", 8, 1, false},
    {DType::kQ8_0, "q8_0", 34, 32, true},
    {DType::kQ4_0, "q4_0", 18, 32, true},
    {DType::kQ4_1, "q4_1", 20, 32, true},
    {DType::kQ4_K, "q4_k", 144, 256, true},
    {DType::kQ6_K, "q6_k", 210, 256, true},
    {DType::kQ5_K, "q5_k", 176, 256, true},
    {DType::kI8_F16, "i8_f16", 0, 0, true},
    {DType::kI8_BF16, "i8_bf16", 0, 0, true},
    {DType::kI4G32_F16, "i4g32_f16", 0, 32, true},
    {DType::kI4G32_BF16, "i4g32_bf16", 0, 32, true},
    {DType::kI4G64_F16, "i4g64_f16", 0, 64, true},
    {DType::kI4G64_BF16, "i4g64_bf16", 0, 64, true},
    {DType::kI4G128_F16, "i4g128_f16", 0, 128, true},
    {DType::kI4G128_BF16, "i4g128_bf16", 0, 128, true},
    {DType::kI4G32Z_F16, "i4g32z_f16", 0, 32, true},
    {DType::kI4G32Z_BF16, "i4g32z_bf16", 0, 32, true},
    {DType::kI4G64Z_F16, "i4g64z_f16", 0, 64, true},
    {DType::kI4G64Z_BF16, "i4g64z_bf16", 0, 64, true},
    {DType::kI4G128Z_F16, "i4g128z_f16", 0, 128, true},
    {DType::kI4G128Z_BF16, "i4g128z_bf16", 0, 128, true},
    {DType::kI8G32_F16, "i8g32_f16", 0, 32, true},
    {DType::kI4G32M_F16, "i4g32m_f16", 0, 32, true},
    {DType::kBool, "bool", 1, 1, false},
};

const DTypeInfo& info(DType dtype) {
  for (const auto& entry : kInfos)
    if (entry.dtype == dtype) return entry;
  return kInfos[0];
}
}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& entry : kInfos)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

bool is_quantized(DType dtype) { return info(dtype).quantized; }
bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }
size_t dtype_size(DType dtype) { return info(dtype).block_bytes; }
size_t block_elements(DType dtype) { return info(dtype).block_elems; }

size_t storage_bytes(DType dtype, int64_t count) {
  const auto& entry = info(dtype);
  if (entry.block_elems == 0 || entry.block_bytes == 0) return 0;  // a row format: ir/quant.h
  return static_cast<size_t>(count) / entry.block_elems * entry.block_bytes;
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else {  // subnormal: normalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      out = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else {
    out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float result;
  std::memcpy(&result, &out, sizeof(result));
  return result;
}

uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: count units of 2^-24, rounded to even
    float magnitude;
    std::memcpy(&magnitude, &abs, sizeof(magnitude));
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f)));
  }
  // normal: rebias exponent and round the 13 dropped mantissa bits to nearest even
  uint32_t rebased = abs - ((127u - 15u) << 23);
  const uint32_t dropped = rebased & 0x1fffu;
  uint32_t half = rebased >> 13;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &wide, sizeof(result));
  return result;
}

uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet nan
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace agentcompile::ir
