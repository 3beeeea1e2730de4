// The row formats (i8_*, i4*): their layout, exact dequantization and round-to-nearest quantization;
// and the byte sizes of every quantized tensor (ir/quant.h defines the formats).
//
// Quantization and dequantization are written as the definitions in quant.h read, one f32 operation
// at a time, so an independent implementation (python/make_quant_fixtures.py, numpy) reproduces the
// bytes exactly; a compiler must not contract a multiply and an add here.
#include "ir/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace agentcompile::ir {

namespace {

constexpr int64_t kRowAlignment = 16;

int64_t align_row(int64_t bytes) { return (bytes + kRowAlignment - 1) / kRowAlignment * kRowAlignment; }

bool is_row_format(const QuantLayout& layout) {
  return layout.kind == QuantLayout::Kind::kInt8Channel || layout.kind == QuantLayout::Kind::kInt8Group ||
         layout.kind == QuantLayout::Kind::kInt4Group;
}

float load_scale(DType scale, const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  return scale == DType::kF16 ? half_to_float(bits) : bf16_to_float(bits);
}

uint16_t scale_bits(DType scale, float value) { return scale == DType::kF16 ? float_to_half(value) : float_to_bf16(value); }

// Where the parts of a row lie: nibbles or int8 values from 0, the scales, the zero points or offsets.
struct RowParts {
  int64_t groups = 1;
  int64_t scales_at = 0;
  int64_t zeros_at = 0;  // the zero points (i4gGz) or the f16 offsets (i4g32m)
  int64_t bytes = 0;
};

RowParts row_parts(const QuantLayout& layout, int64_t K) {
  RowParts parts;
  const bool int8 = layout.kind == QuantLayout::Kind::kInt8Channel || layout.kind == QuantLayout::Kind::kInt8Group;
  parts.groups = layout.kind == QuantLayout::Kind::kInt8Channel ? 1 : K / layout.group;
  parts.scales_at = int8 ? K : K / 2;
  parts.zeros_at = parts.scales_at + 2 * parts.groups;
  parts.bytes = align_row(parts.zeros_at + (layout.zero_points ? parts.groups : layout.offsets ? 2 * parts.groups : 0));
  return parts;
}

void dequantize_row(const QuantLayout& layout, const RowParts& parts, const uint8_t* row, int64_t K, float* out) {
  if (layout.kind == QuantLayout::Kind::kInt8Channel) {
    const float s = load_scale(layout.scale, row + parts.scales_at);
    for (int64_t k = 0; k < K; ++k) out[k] = s * static_cast<float>(static_cast<int8_t>(row[k]));
    return;
  }
  const int64_t group = layout.group;
  for (int64_t g = 0; g < parts.groups; ++g) {
    const float s = load_scale(layout.scale, row + parts.scales_at + 2 * g);
    if (layout.kind == QuantLayout::Kind::kInt8Group) {
      for (int64_t k = g * group; k < (g + 1) * group; ++k) out[k] = s * static_cast<float>(static_cast<int8_t>(row[k]));
      continue;
    }
    if (layout.offsets) {
      const float m = load_scale(layout.scale, row + parts.zeros_at + 2 * g);
      for (int64_t k = g * group; k < (g + 1) * group; ++k) {
        const float product = s * static_cast<float>((row[k / 2] >> (4 * (k % 2))) & 0x0f);
        out[k] = product + m;
      }
      continue;
    }
    const int zero = layout.zero_points ? row[parts.zeros_at + g] : 8;
    for (int64_t k = g * group; k < (g + 1) * group; ++k) {
      const int nibble = (row[k / 2] >> (4 * (k % 2))) & 0x0f;
      out[k] = s * static_cast<float>(nibble - zero);
    }
  }
}

// The stored scale for `value` (already divided by the quant range), or an error when it is not
// finite in the scale type.
Expected<float> stored_scale(DType scale, float value, const std::string& where) {
  const float stored = scale == DType::kF16 ? half_to_float(float_to_half(value)) : bf16_to_float(float_to_bf16(value));
  if (!std::isfinite(stored))
    return error(ErrorCode::kInvalidArgument, where + ": the scale " + std::to_string(value) +
                                                  " overflows f16; quantize with bf16 scales");
  return stored;
}

float clamp_rint(float value, float lo, float hi) { return std::min(std::max(std::nearbyint(value), lo), hi); }

// The scales a group's search tries, in this order; the first of the least squared error is stored.
// Symmetric int4: s = sign · max|x| / d, so the grid's extra step (−8) falls on the side of the group's
// largest magnitude when the sign is negative, and a slightly finer grid may clamp one outlier to fit
// the rest better. Zero points: s = (hi − lo) / 15 · f, the grid shrunk toward the zero point.
// On SmolLM2's weights (layers 3, 10, 20) the search takes the relative RMS error of g32 from 10.0% to
// 7.8% (symmetric) and 8.1% to 7.4% (zero points); int8 per channel gains nothing from it (0.88%).
constexpr float kSymmetricDivisors[] = {7.0f, 7.5f, 8.0f, 8.5f};
constexpr float kZeroPointShrink[] = {1.0f, 0.9f, 0.8f};

// A value's step on the symmetric grid of scale s (−8..7), and its nibble on the zero-point grid (0..15).
float symmetric_step(float v, float s) { return clamp_rint(v / s, -8.0f, 7.0f); }
float zero_point_nibble(float v, float s, float zero) { return std::min(std::max(std::nearbyint(v / s) + zero, 0.0f), 15.0f); }

// Squared error of a group on the symmetric grid of scale s (f32, in element order).
float symmetric_error(const float* v, int64_t n, float s) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = v[i] - s * symmetric_step(v[i], s);
    sum += d * d;
  }
  return sum;
}

float zero_point_error(const float* v, int64_t n, float s, float zero) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = v[i] - s * (zero_point_nibble(v[i], s, zero) - zero);
    sum += d * d;
  }
  return sum;
}

Status quantize_row(const QuantLayout& layout, const RowParts& parts, const float* x, int64_t K, uint8_t* row,
                    const std::string& where) {
  std::memset(row, 0, static_cast<size_t>(parts.bytes));
  const int64_t group = layout.kind == QuantLayout::Kind::kInt8Channel ? K : layout.group;
  for (int64_t g = 0; g < parts.groups; ++g) {
    const float* v = x + g * group;
    float amax = 0, lo = 0, hi = 0;
    for (int64_t i = 0; i < group; ++i) {
      if (!std::isfinite(v[i]))
        return error(ErrorCode::kInvalidArgument, where + ": element " + std::to_string(g * group + i) + " is " +
                                                      std::to_string(v[i]) + "; only finite values can be quantized");
      amax = std::max(amax, std::fabs(v[i]));
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    uint8_t* scale_at = row + parts.scales_at + 2 * g;
    if (layout.kind == QuantLayout::Kind::kInt8Channel) {
      AC_ASSIGN_OR_RETURN(const float s, stored_scale(layout.scale, amax / 127.0f, where));
      const uint16_t bits = scale_bits(layout.scale, s);
      std::memcpy(scale_at, &bits, sizeof(bits));
      for (int64_t k = 0; k < K && s != 0; ++k)
        row[k] = static_cast<uint8_t>(static_cast<int8_t>(clamp_rint(v[k] / s, -127.0f, 127.0f)));
      continue;
    }
    if (!layout.zero_points) {
      // The plain scale (max|x| / 7) first: its error is the one to beat, and an overflow is reported
      // for it; a searched scale that overflows the scale type is skipped.
      AC_ASSIGN_OR_RETURN(float s, stored_scale(layout.scale, amax / 7.0f, where));
      if (s != 0) {
        float best = symmetric_error(v, group, s);
        for (float d : kSymmetricDivisors)
          for (float sign : {1.0f, -1.0f}) {
            const Expected<float> c = stored_scale(layout.scale, sign * amax / d, where);
            if (!c || *c == 0) continue;
            const float e = symmetric_error(v, group, *c);
            if (e < best) best = e, s = *c;
          }
      }
      const uint16_t bits = scale_bits(layout.scale, s);
      std::memcpy(scale_at, &bits, sizeof(bits));
      for (int64_t i = 0; i < group; ++i) {
        const int nibble = s == 0 ? 8 : static_cast<int>(symmetric_step(v[i], s)) + 8;
        const int64_t k = g * group + i;
        row[k / 2] |= static_cast<uint8_t>(nibble << (4 * (k % 2)));
      }
      continue;
    }
    AC_ASSIGN_OR_RETURN(float s, stored_scale(layout.scale, (hi - lo) / 15.0f, where));
    float zero = s == 0 ? 0.0f : clamp_rint(-lo / s, 0.0f, 15.0f);
    if (s != 0) {
      float best = zero_point_error(v, group, s, zero);
      for (float f : kZeroPointShrink) {
        const Expected<float> c = stored_scale(layout.scale, (hi - lo) / 15.0f * f, where);
        if (!c || *c == 0) continue;
        const float z = clamp_rint(-lo / *c, 0.0f, 15.0f);
        const float e = zero_point_error(v, group, *c, z);
        if (e < best) best = e, s = *c, zero = z;
      }
    }
    const uint16_t bits = scale_bits(layout.scale, s);
    std::memcpy(scale_at, &bits, sizeof(bits));
    row[parts.zeros_at + g] = static_cast<uint8_t>(zero);
    for (int64_t i = 0; i < group; ++i) {
      const int nibble = s == 0 ? 0 : static_cast<int>(zero_point_nibble(v[i], s, zero));
      const int64_t k = g * group + i;
      row[k / 2] |= static_cast<uint8_t>(nibble << (4 * (k % 2)));
    }
  }
  return Status::ok();
}

}  // namespace

QuantLayout quant_layout(DType dtype) {
  using K = QuantLayout::Kind;
  switch (dtype) {
    case DType::kQ8_0: return {K::kGgml, 8, 32, DType::kF16, false};
    case DType::kQ4_0: return {K::kGgml, 4, 32, DType::kF16, false};
    case DType::kQ4_1: return {K::kGgml, 4, 32, DType::kF16, true};
    case DType::kQ4_K: return {K::kGgml, 4, 256, DType::kF16, true};
    case DType::kQ5_K: return {K::kGgml, 5, 256, DType::kF16, true};
    case DType::kQ6_K: return {K::kGgml, 6, 256, DType::kF16, false};
    case DType::kI8_F16: return {K::kInt8Channel, 8, 0, DType::kF16, false};
    case DType::kI8_BF16: return {K::kInt8Channel, 8, 0, DType::kBF16, false};
    case DType::kI4G32_F16: return {K::kInt4Group, 4, 32, DType::kF16, false};
    case DType::kI4G32_BF16: return {K::kInt4Group, 4, 32, DType::kBF16, false};
    case DType::kI4G64_F16: return {K::kInt4Group, 4, 64, DType::kF16, false};
    case DType::kI4G64_BF16: return {K::kInt4Group, 4, 64, DType::kBF16, false};
    case DType::kI4G128_F16: return {K::kInt4Group, 4, 128, DType::kF16, false};
    case DType::kI4G128_BF16: return {K::kInt4Group, 4, 128, DType::kBF16, false};
    case DType::kI4G32Z_F16: return {K::kInt4Group, 4, 32, DType::kF16, true};
    case DType::kI4G32Z_BF16: return {K::kInt4Group, 4, 32, DType::kBF16, true};
    case DType::kI4G64Z_F16: return {K::kInt4Group, 4, 64, DType::kF16, true};
    case DType::kI4G64Z_BF16: return {K::kInt4Group, 4, 64, DType::kBF16, true};
    case DType::kI4G128Z_F16: return {K::kInt4Group, 4, 128, DType::kF16, true};
    case DType::kI4G128Z_BF16: return {K::kInt4Group, 4, 128, DType::kBF16, true};
    case DType::kI8G32_F16: return {K::kInt8Group, 8, 32, DType::kF16, false};
    case DType::kI4G32M_F16: return {K::kInt4Group, 4, 32, DType::kF16, false, true};
    default: return {};
  }
}

std::string row_length_problem(DType dtype, int64_t K) {
  const QuantLayout layout = quant_layout(dtype);
  if (K < 1) return "rows of " + std::to_string(K) + " elements cannot be stored";
  switch (layout.kind) {
    case QuantLayout::Kind::kPlain:
    case QuantLayout::Kind::kInt8Channel: return "";
    case QuantLayout::Kind::kGgml:
      if (K % layout.group == 0) return "";
      return "rows of " + std::to_string(K) + " elements are not a whole number of " + std::to_string(layout.group) + "-element " +
             std::string(dtype_name(dtype)) + " blocks";
    case QuantLayout::Kind::kInt8Group:
    case QuantLayout::Kind::kInt4Group:
      if (K % layout.group == 0) return "";
      return "rows of " + std::to_string(K) + " elements are not a whole number of " + std::to_string(layout.group) + "-element groups";
  }
  return "";
}

int64_t row_bytes(DType dtype, int64_t K) {
  const QuantLayout layout = quant_layout(dtype);
  switch (layout.kind) {
    case QuantLayout::Kind::kPlain: return K * static_cast<int64_t>(dtype_size(dtype));
    case QuantLayout::Kind::kGgml: return static_cast<int64_t>(storage_bytes(dtype, K));
    default: return row_parts(layout, K).bytes;
  }
}

uint64_t tensor_bytes(const TensorType& type) {
  const int64_t elements = static_elements(type.shape);
  if (!is_quantized(type.dtype)) return static_cast<uint64_t>(elements) * dtype_size(type.dtype);
  if (type.shape.empty() || elements == 0) return 0;
  const int64_t K = type.shape.back().value;
  return static_cast<uint64_t>(elements / K) * static_cast<uint64_t>(row_bytes(type.dtype, K));
}

Status dequantize_rows(DType dtype, const uint8_t* src, int64_t rows, int64_t K, float* dst) {
  const QuantLayout layout = quant_layout(dtype);
  if (std::string problem = row_length_problem(dtype, K); !problem.empty())
    return error(ErrorCode::kInvalidArgument, "dequantize " + std::string(dtype_name(dtype)) + ": " + problem);
  if (!is_row_format(layout)) return dequantize(dtype, src, rows * K, dst);
  const RowParts parts = row_parts(layout, K);
  for (int64_t r = 0; r < rows; ++r) dequantize_row(layout, parts, src + r * parts.bytes, K, dst + r * K);
  return Status::ok();
}

Status quantize_rows(DType dtype, const float* src, int64_t rows, int64_t K, uint8_t* dst, QuantError* error_out) {
  const QuantLayout layout = quant_layout(dtype);
  const std::string name(dtype_name(dtype));
  if (!is_row_format(layout) || holds_ggml_blocks_only(dtype))
    return error(ErrorCode::kUnsupported, "quantize: " + name + " is not a format weights are quantized to (i8_*, i4gG*)");
  if (std::string problem = row_length_problem(dtype, K); !problem.empty())
    return error(ErrorCode::kInvalidArgument, "quantize " + name + ": " + problem);
  const RowParts parts = row_parts(layout, K);
  // Rows on several threads (each group's scale search costs a dozen passes over it); each thread
  // sums its rows' errors, added in thread order, and the first failing row's error is reported.
  struct ThreadShare {  // rows t, t + threads, ...
    double sum_sq = 0, err_sq = 0, max_abs = 0;
    int64_t failed_row = -1;
    Status status = Status::ok();
  };
  const auto threads = static_cast<size_t>(std::clamp<int64_t>(rows / 64, 1, std::max(1u, std::thread::hardware_concurrency())));
  std::vector<ThreadShare> shares(threads);
  auto work = [&](size_t t) {
    ThreadShare& part = shares[t];
    std::vector<float> back(static_cast<size_t>(K));
    for (int64_t r = static_cast<int64_t>(t); r < rows; r += static_cast<int64_t>(threads)) {
      uint8_t* row = dst + r * parts.bytes;
      const float* x = src + r * K;
      if (Status status = quantize_row(layout, parts, x, K, row, "quantize " + name + ": row " + std::to_string(r)); !status.is_ok()) {
        part.status = std::move(status), part.failed_row = r;
        return;
      }
      if (!error_out) continue;
      dequantize_row(layout, parts, row, K, back.data());
      for (int64_t k = 0; k < K; ++k) {
        const double diff = static_cast<double>(x[k]) - static_cast<double>(back[static_cast<size_t>(k)]);
        part.sum_sq += static_cast<double>(x[k]) * x[k];
        part.err_sq += diff * diff;
        part.max_abs = std::max(part.max_abs, std::fabs(diff));
      }
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (std::thread& thread : pool) thread.join();
  }
  double sum_sq = 0, err_sq = 0, max_abs = 0;
  const ThreadShare* failed = nullptr;
  for (const ThreadShare& part : shares) {
    if (part.failed_row >= 0 && (!failed || part.failed_row < failed->failed_row)) failed = &part;
    sum_sq += part.sum_sq, err_sq += part.err_sq, max_abs = std::max(max_abs, part.max_abs);
  }
  if (failed) return failed->status;
  if (error_out) *error_out = QuantError{max_abs, sum_sq > 0 ? std::sqrt(err_sq / sum_sq) : 0.0};
  return Status::ok();
}

std::optional<DType> ggml_row_format(DType ggml) {
  switch (ggml) {
    case DType::kQ8_0: return DType::kI8G32_F16;
    case DType::kQ4_0: return DType::kI4G32_F16;
    case DType::kQ4_1:
    case DType::kQ4_K: return DType::kI4G32M_F16;
    default: return std::nullopt;
  }
}

bool holds_ggml_blocks_only(DType row_format) {
  const QuantLayout layout = quant_layout(row_format);
  return layout.kind == QuantLayout::Kind::kInt8Group || layout.offsets;
}

namespace {

// One 16-byte nibble row of a group as i4g32m stores it: element i's nibble in the low (even i) or high
// (odd i) half of byte i / 2.
void store_group_nibbles(const int (&n)[32], uint8_t* nibbles) {
  for (int i = 0; i < 32; ++i) nibbles[i / 2] |= static_cast<uint8_t>(n[i] << (4 * (i % 2)));
}

// Q4_K (144 bytes per 256: f16 d | f16 dmin | 12 bytes of 6-bit scales and mins | 128 bytes of nibbles,
// sub-block j reading the low (even j) or high (odd j) nibbles of bytes [32·(j/2), 32·(j/2) + 32)) as
// i4g32m_f16: each sub-block a group with scale f16(d·sc_j) and offset f16(−dmin·m_j).
Status transcode_q4_k_rows(const uint8_t* src, int64_t rows, int64_t K, const RowParts& parts, uint8_t* dst) {
  const int64_t blocks = K / 256;
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = dst + r * parts.bytes;
    std::memset(row, 0, static_cast<size_t>(parts.bytes));
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* in = src + (r * blocks + b) * 144;
      uint16_t d_bits, dmin_bits;
      std::memcpy(&d_bits, in, 2);
      std::memcpy(&dmin_bits, in + 2, 2);
      const float d = half_to_float(d_bits), dmin = half_to_float(dmin_bits);
      for (int j = 0; j < 8; ++j) {
        int sc, mn;
        ggml_k_scale_min(in + 4, j, sc, mn);
        const float scale = d * static_cast<float>(sc), offset = -(dmin * static_cast<float>(mn));  // exact in f32
        const uint16_t scale_h = float_to_half(scale), offset_h = float_to_half(offset);
        if (!std::isfinite(half_to_float(scale_h)) || !std::isfinite(half_to_float(offset_h)))
          return error(ErrorCode::kInvalidArgument, "transcode q4_k: row " + std::to_string(r) + " block " + std::to_string(b) +
                                                        " sub-block " + std::to_string(j) + ": d·sc = " + std::to_string(scale) +
                                                        " or dmin·m = " + std::to_string(-offset) + " is not a finite f16 (beyond its range, or the block's d or dmin is not finite)");
        const int64_t g = b * 8 + j;
        std::memcpy(row + parts.scales_at + 2 * g, &scale_h, 2);
        std::memcpy(row + parts.zeros_at + 2 * g, &offset_h, 2);
        const uint8_t* q = in + 16 + 32 * (j / 2);
        int n[32];
        for (int i = 0; i < 32; ++i) n[i] = (q[i] >> (4 * (j % 2))) & 0x0f;
        store_group_nibbles(n, row + 16 * g);
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status transcode_ggml_rows(DType from, const uint8_t* src, int64_t rows, int64_t K, uint8_t* dst) {
  const std::optional<DType> to = ggml_row_format(from);
  if (!to) return error(ErrorCode::kUnsupported, "transcode: no row format holds " + std::string(dtype_name(from)) + " blocks");
  if (std::string problem = row_length_problem(from, K); !problem.empty())
    return error(ErrorCode::kInvalidArgument, "transcode " + std::string(dtype_name(from)) + ": " + problem);
  const RowParts parts = row_parts(quant_layout(*to), K);
  if (from == DType::kQ4_K) return transcode_q4_k_rows(src, rows, K, parts, dst);
  const int64_t blocks = K / 32, block_bytes = static_cast<int64_t>(dtype_size(from));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* in = src + r * blocks * block_bytes;
    uint8_t* row = dst + r * parts.bytes;
    std::memset(row, 0, static_cast<size_t>(parts.bytes));
    for (int64_t b = 0; b < blocks; ++b, in += block_bytes) {
      std::memcpy(row + parts.scales_at + 2 * b, in, 2);  // d, f16 in both
      if (from == DType::kQ8_0) {
        std::memcpy(row + 32 * b, in + 2, 32);
        continue;
      }
      if (from == DType::kQ4_1) std::memcpy(row + parts.zeros_at + 2 * b, in + 2, 2);  // m
      // The block's element i < 16 is the low nibble of byte i, element i + 16 its high nibble.
      const uint8_t* qs = in + (from == DType::kQ4_1 ? 4 : 2);
      int n[32];
      for (int i = 0; i < 32; ++i) n[i] = i < 16 ? qs[i] & 0x0f : qs[i - 16] >> 4;
      store_group_nibbles(n, row + 16 * b);
    }
  }
  return Status::ok();
}

}  // namespace agentcompile::ir
