// Dequantization of ggml block formats (GGUF's tensor types) to f32.
//
// Each function mirrors gguf-py's numpy code operation for operation: the scale products are rounded
// to f32 before they meet the quants (Q4_K: (d·sc)·q − dmin·m; Q6_K: (d·sc)·q), so a compiler must not
// fuse a multiply and an add into an FMA here; the exact-match tests in gguf_test.cpp would catch it.
#include "ir/quant.h"

#include <cstring>
#include <string>

// No multiply-add fusion in this file, whatever -march says (GCC contracts across statements in C++).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace agentcompile::ir {

namespace {

float load_f16(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return half_to_float(bits);
}

// Q8_0, 34 bytes per 32: f16 d | int8 q[32]; x = q·d.
void dequant_q8_0(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 34, dst += 32) {
    const float d = load_f16(src);
    for (int i = 0; i < 32; ++i) dst[i] = static_cast<float>(static_cast<int8_t>(src[2 + i])) * d;
  }
}

// Q4_0, 18 bytes per 32: f16 d | 16 bytes; element i < 16 is the low nibble of byte i, element i + 16
// its high nibble; x = d·(q − 8).
void dequant_q4_0(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 18, dst += 32) {
    const float d = load_f16(src);
    const uint8_t* qs = src + 2;
    for (int i = 0; i < 16; ++i) {
      dst[i] = d * static_cast<float>((qs[i] & 0x0f) - 8);
      dst[i + 16] = d * static_cast<float>((qs[i] >> 4) - 8);
    }
  }
}

// Q4_1, 20 bytes per 32: f16 d | f16 m | 16 bytes of nibbles as in Q4_0; x = d·q + m.
void dequant_q4_1(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 20, dst += 32) {
    const float d = load_f16(src);
    const float m = load_f16(src + 2);
    const uint8_t* qs = src + 4;
    for (int i = 0; i < 16; ++i) {
      const float lo = d * static_cast<float>(qs[i] & 0x0f);
      const float hi = d * static_cast<float>(qs[i] >> 4);
      dst[i] = lo + m;
      dst[i + 16] = hi + m;
    }
  }
}

// Q4_K, 144 bytes per 256: f16 d | f16 dmin | 12 bytes of eight 6-bit scales and eight 6-bit mins |
// 128 bytes of nibbles. Sub-block j (32 elements) reads the low (j even) or high (j odd) nibbles of
// bytes [32·(j/2), 32·(j/2) + 32); x = (d·sc_j)·q − dmin·m_j.
void dequant_q4_k(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 144, dst += 256) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* packed = src + 4;
    const uint8_t* qs = src + 16;
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      ggml_k_scale_min(packed, j, sc, mn);
      const float scale = d * static_cast<float>(sc);
      const float offset = dmin * static_cast<float>(mn);
      const uint8_t* q = qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int i = 0; i < 32; ++i) {
        const float scaled = scale * static_cast<float>((q[i] >> shift) & 0x0f);
        dst[32 * j + i] = scaled - offset;
      }
    }
  }
}

// Q5_K, 176 bytes per 256: f16 d | f16 dmin | 12 bytes of scales and mins as in Q4_K | qh[32] |
// qs[128]. Sub-block j takes its low four bits as Q4_K's sub-block j does and its fifth bit from
// bit j of qh[i] (i the element's index within the sub-block); x = (d·sc_j)·q − dmin·m_j.
void dequant_q5_k(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 176, dst += 256) {
    const float d = load_f16(src);
    const float dmin = load_f16(src + 2);
    const uint8_t* packed = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* qs = src + 48;
    for (int j = 0; j < 8; ++j) {
      int sc, mn;
      ggml_k_scale_min(packed, j, sc, mn);
      const float scale = d * static_cast<float>(sc);
      const float offset = dmin * static_cast<float>(mn);
      const uint8_t* q = qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int i = 0; i < 32; ++i) {
        const int value = ((q[i] >> shift) & 0x0f) | (((qh[i] >> j) & 1) << 4);
        const float scaled = scale * static_cast<float>(value);
        dst[32 * j + i] = scaled - offset;
      }
    }
  }
}

// Q6_K, 210 bytes per 256: ql[128] (low 4 bits) | qh[64] (high 2 bits) | int8 scales[16] | f16 d.
// Each half of 128 elements uses 64 bytes of ql and 32 of qh: element r of the half takes nibble r/64
// of ql[r % 64] and bit pair r/32 of qh[r % 32]; q = (low | high << 4) − 32; x = (d·scale_{e/16})·q.
void dequant_q6_k(const uint8_t* src, int64_t blocks, float* dst) {
  for (int64_t b = 0; b < blocks; ++b, src += 210, dst += 256) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const auto* scales = reinterpret_cast<const int8_t*>(src + 192);
    const float d = load_f16(src + 208);
    for (int e = 0; e < 256; ++e) {
      const int half = e / 128;
      const int r = e % 128;
      const int low = (ql[64 * half + r % 64] >> (4 * (r / 64))) & 0x0f;
      const int high = (qh[32 * half + r % 32] >> (2 * (r / 32))) & 0x03;
      const float scale = d * static_cast<float>(scales[e / 16]);
      dst[e] = scale * static_cast<float>((low | (high << 4)) - 32);
    }
  }
}

}  // namespace

// Q4_K and Q5_K pack their scales and mins thus: packed[0..3] hold sc 0-3 in the low 6 bits and the top 2
// bits of sc 4-7 above them; packed[4..7] the same for the mins; packed[8..11] the low 4 bits of sc 4-7
// (low nibble) and of mins 4-7 (high nibble).
void ggml_k_scale_min(const uint8_t* packed, int j, int& sc, int& mn) {
  if (j < 4) {
    sc = packed[j] & 0x3f;
    mn = packed[j + 4] & 0x3f;
  } else {
    sc = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 2) & 0x30);
    mn = (packed[j + 4] >> 4) | ((packed[j] >> 2) & 0x30);
  }
}

Status dequantize(DType type, const uint8_t* src, int64_t count, float* dst) {
  const QuantLayout::Kind kind = quant_layout(type).kind;
  if (kind == QuantLayout::Kind::kInt8Channel || kind == QuantLayout::Kind::kInt8Group || kind == QuantLayout::Kind::kInt4Group)
    return error(ErrorCode::kInvalidArgument, "dequantize: " + std::string(dtype_name(type)) +
                                                  " stores rows with their scales; dequantize_rows takes the row length");
  const auto block = static_cast<int64_t>(block_elements(type));
  if (count < 0 || count % block != 0)
    return error(ErrorCode::kInvalidArgument, "dequantize: " + std::to_string(count) + " elements of " +
                                                  std::string(dtype_name(type)) + " is not a whole number of " +
                                                  std::to_string(block) + "-element blocks");
  const int64_t blocks = count / block;
  switch (type) {
    case DType::kF32:
      if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
      return Status::ok();
    case DType::kF16:
      for (int64_t i = 0; i < count; ++i) dst[i] = load_f16(src + 2 * i);
      return Status::ok();
    case DType::kBF16:
      for (int64_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, sizeof(bits));
        dst[i] = bf16_to_float(bits);
      }
      return Status::ok();
    case DType::kQ8_0: dequant_q8_0(src, blocks, dst); return Status::ok();
    case DType::kQ4_0: dequant_q4_0(src, blocks, dst); return Status::ok();
    case DType::kQ4_1: dequant_q4_1(src, blocks, dst); return Status::ok();
    case DType::kQ4_K: dequant_q4_k(src, blocks, dst); return Status::ok();
    case DType::kQ5_K: dequant_q5_k(src, blocks, dst); return Status::ok();
    case DType::kQ6_K: dequant_q6_k(src, blocks, dst); return Status::ok();
    default: break;
  }
  return error(ErrorCode::kUnsupported,
               "dequantize: " + std::string(dtype_name(type)) + " is not a floating-point storage type");
}

}  // namespace agentcompile::ir
