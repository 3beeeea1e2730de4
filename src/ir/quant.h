// Quantized weight formats: how a tensor of each format is laid out in bytes, its exact
// dequantization (what the reference interpreter computes and every kernel is validated against),
// and round-to-nearest quantization into the formats a checkpoint can be quantized to at compile time.
//
// A quantized tensor is a weight [..., K] stored as consecutive rows of K elements (the leading dims
// flattened), each row in row_bytes(format, K) bytes, so any run of rows is a contiguous byte range
// (a fused QKV weight's parts are rows of it: ir::ParamDecl::alias_of).
//
// GGUF blocks (q8_0, q4_0, q4_1, q4_k, q5_k, q6_k) are llama.cpp's: a row is K / block blocks, each
// block laid out as ggml lays it out (ir/quant_ggml.cpp says how), and dequantization is gguf-py's
// `gguf.quants.dequantize`, operation for operation in f32, so the two agree bit for bit.
//
// The row formats (i8_*, i4*), with S the scale type (f16 or bf16, the suffix) and rows padded with
// zero bytes to a multiple of 16 so every row starts 16-byte aligned (128-bit loads):
//   i8_S        K int8 q_k (two's complement) | one scale s            x_k = s·q_k
//   i4gG_S      K/2 bytes of nibbles | K/G scales s_g                  x_k = s_g·(n_k − 8)
//   i4gGz_S     K/2 bytes of nibbles | K/G scales s_g | K/G bytes z_g  x_k = s_g·(n_k − z_g)
//   i8g32_f16   K int8 q_k | K/32 f16 scales s_g                   x_k = s_g·q_k
//   i4g32m_f16  K/2 bytes of nibbles | K/32 f16 scales s_g | K/32 f16 offsets m_g
//                                                                   x_k = s_g·n_k + m_g
// where element k's nibble n_k is the low half of byte k/2 for even k and the high half for odd k
// (GPTQ's order within a byte), g = k / G, and each product is one f32 multiply of s (widened
// exactly from S) by the small integer (then, for i4g32m, one f32 add of m).
// The last two hold GGUF blocks' values exactly, in the layout the GPU kernels read: Q8_0 as i8g32_f16,
// Q4_0 as i4g32_f16 and Q4_1 as i4g32m_f16 (transcode_ggml_rows; same bytes per element as the
// blocks). Q4_K goes to i4g32m_f16 too, with its products d·sc and dmin·m rounded to f16 (its only
// inexact case, see transcode_ggml_rows). They are not formats a checkpoint is quantized to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "agentcompile/status.h"
#include "ir/dtype.h"
#include "ir/shape.h"

namespace agentcompile::ir {

// What a format is made of, for code that must know its parts (kernels, reports).
struct QuantLayout {
  enum class Kind { kPlain, kGgml, kInt8Channel, kInt8Group, kInt4Group } kind = Kind::kPlain;
  int bits = 0;             // bits per quantized element (8, 4, 5, 6 for the GGUF types)
  int64_t group = 0;        // elements per scale (per block for GGUF); 0: the whole row (i8_*)
  DType scale = DType::kF16;
  bool zero_points = false;
  bool offsets = false;     // i4g32m: a float offset per group (x = s·n + m) in place of a zero point
};
QuantLayout quant_layout(DType dtype);

// An empty string when rows of K elements can be stored in `dtype`, else why not ("rows of 576
// elements are not a whole number of 128-element groups").
std::string row_length_problem(DType dtype, int64_t K);
// Bytes of one row of K elements (K must pass row_length_problem).
int64_t row_bytes(DType dtype, int64_t K);
// Bytes of a static tensor of any dtype: elements × size for plain ones, rows × row_bytes for
// quantized ones (the last dim is K; a rank-0 or empty tensor holds 0 rows).
uint64_t tensor_bytes(const TensorType& type);

// Dequantizes `rows` rows of K elements of `dtype` (any float or quantized type) at `src` into f32
// at `dst` (rows × K values). `src` holds rows × row_bytes(dtype, K) bytes.
Status dequantize_rows(DType dtype, const uint8_t* src, int64_t rows, int64_t K, float* dst);

// The same for storage addressed by element count (plain types and GGUF blocks, whose rows need no
// length: `count` a multiple of the block). The GGUF reader's entry point.
Status dequantize(DType dtype, const uint8_t* src, int64_t count, float* dst);

// The row format a GPU kernel reads a GGUF block type as (Q8_0 -> i8g32_f16, Q4_0 -> i4g32_f16, Q4_1 and
// Q4_K -> i4g32m_f16), or nullopt for the types no row format holds (Q5_K, Q6_K: dequantized at load).
std::optional<DType> ggml_row_format(DType ggml);
// Whether a row format exists only to hold GGUF blocks' values (i8g32_f16, i4g32m_f16): nothing is
// quantized to it, and only GGUF blocks are read into it.
bool holds_ggml_blocks_only(DType row_format);

// Rewrites `rows` rows of K elements of GGUF blocks of type `from` (rows × K / block blocks at `src`) as
// rows of ggml_row_format(from) at `dst` (rows × row_bytes bytes): the same values, bit for bit after
// dequantization, moved into the row layout (Q4_0 / Q4_1's nibbles reordered within their block).
// Q4_K's sub-block of 32 becomes a group: scale d·sc_j and offset −dmin·m_j, each an exact f32 product
// rounded once to f16 (a relative change of at most 2^-11 of each; llama.cpp keeps them in f32), so an
// element moves by at most 2^-11 · (15·|d·sc_j| + |dmin·m_j|). A product that is not a finite f16 is an
// error naming the block (--dequantize then keeps the tensor's exact values at f16).
Status transcode_ggml_rows(DType from, const uint8_t* src, int64_t rows, int64_t K, uint8_t* dst);

// The 6-bit scale and min of sub-block j (0..7) from the 12 bytes Q4_K and Q5_K pack them in.
void ggml_k_scale_min(const uint8_t* packed, int j, int& sc, int& mn);

// How far a quantized tensor lies from the values it was made from.
struct QuantError {
  double max_abs = 0;   // max |x − dequantized x|
  double rel_rms = 0;   // ‖x − dequantized x‖₂ / ‖x‖₂ (0 for an all-zero tensor)
};

// Quantization of `rows` rows of K f32 values into a row format (i8_*, i4*), round to nearest on a
// scale chosen per row (int8) or group (int4):
//   i8_S      s = S(max|x| / 127), q = clamp(rint(x / s), −127, 127)
//   i4gG_S    s = S(max|x| / 7), then S(±max|x| / d) for d = 7, 7.5, 8, 8.5 (a negative scale puts the
//             grid's −8 step on the positive side); n = clamp(rint(x / s), −8, 7) + 8
//   i4gGz_S   lo = min(min x, 0), hi = max(max x, 0), s = S((hi − lo) / 15 · f) for f = 1, 0.9, 0.8,
//             z = clamp(rint(−lo / s), 0, 15), n = clamp(rint(x / s) + z, 0, 15)
// where an int4 group keeps the first candidate of the least squared error (summed in f32 in element
// order: python/make_quant_fixtures.py reproduces it), S(v) rounds to the scale type (nearest even),
// x / s divides by the rounded scale, and candidates that round to 0 or overflow are skipped. A scale
// of 0 (an all-zero group) stores q = 0 (n = 8, or z = 0 and n = 0). rint rounds half to even. Rows are
// quantized on several threads.
// Errors: a value that is not finite, a plain scale that overflows f16 (say: use bf16 scales), a
// format that is not a row format, or a K it cannot store. `error`, when given, receives the tensor's error.
Status quantize_rows(DType dtype, const float* src, int64_t rows, int64_t K, uint8_t* dst, QuantError* error = nullptr);

}  // namespace agentcompile::ir
