// The quantized weight formats (ir/quant.h): row layouts and sizes, the row formats' quantization and
// dequantization against an independent numpy implementation (tests/fixtures/quant, written by
// python/make_quant_fixtures.py), the error bounds round-to-nearest promises, and refusals.
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include <gtest/gtest.h>

#include "ir/quant.h"

namespace agentcompile::ir {
namespace {

const std::string kFixtures = std::string(AC_SOURCE_DIR) + "/tests/fixtures/quant/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> read_f32(const std::string& path) {
  const auto bytes = read_bytes(path);
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

uint32_t bits(float value) {
  uint32_t out;
  std::memcpy(&out, &value, sizeof(out));
  return out;
}

const std::vector<DType> kRowFormats = {
    DType::kI8_F16,      DType::kI8_BF16,      DType::kI4G32_F16,   DType::kI4G32_BF16,  DType::kI4G64_F16,   DType::kI4G64_BF16,
    DType::kI4G128_F16,  DType::kI4G128_BF16,  DType::kI4G32Z_F16,  DType::kI4G32Z_BF16, DType::kI4G64Z_F16,  DType::kI4G64Z_BF16,
    DType::kI4G128Z_F16, DType::kI4G128Z_BF16};

TEST(QuantFormat, NamesParseBackAndDescribeTheirParts) {
  for (DType dtype : kRowFormats) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    EXPECT_TRUE(is_quantized(dtype));
    EXPECT_FALSE(is_float(dtype));
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(parse_dtype("q5_k"), DType::kQ5_K);
  const QuantLayout i4 = quant_layout(DType::kI4G64Z_BF16);
  EXPECT_EQ(i4.kind, QuantLayout::Kind::kInt4Group);
  EXPECT_EQ(i4.group, 64);
  EXPECT_EQ(i4.scale, DType::kBF16);
  EXPECT_TRUE(i4.zero_points);
  EXPECT_EQ(quant_layout(DType::kI8_F16).kind, QuantLayout::Kind::kInt8Channel);
  EXPECT_EQ(quant_layout(DType::kQ5_K).kind, QuantLayout::Kind::kGgml);
  EXPECT_EQ(quant_layout(DType::kF16).kind, QuantLayout::Kind::kPlain);
}

TEST(QuantFormat, RowBytesHoldEveryPartAndStart16ByteAligned) {
  // i8: K values and a scale; i4: K/2 nibble bytes, 2 bytes per group scale (+1 per zero point).
  EXPECT_EQ(row_bytes(DType::kI8_F16, 2048), 2064);
  EXPECT_EQ(row_bytes(DType::kI8_BF16, 576), 592);
  EXPECT_EQ(row_bytes(DType::kI4G128_F16, 2048), 1024 + 32);
  EXPECT_EQ(row_bytes(DType::kI4G128Z_F16, 2048), 1024 + 32 + 16);
  EXPECT_EQ(row_bytes(DType::kI4G64_F16, 576), 288 + 18 + 14);  // padded to 320
  EXPECT_EQ(row_bytes(DType::kI4G32Z_BF16, 256), 128 + 16 + 8 + 8);
  for (DType dtype : kRowFormats)
    for (int64_t K : {128, 256, 384, 576, 2048, 6144}) {
      if (!row_length_problem(dtype, K).empty()) continue;
      EXPECT_EQ(row_bytes(dtype, K) % 16, 0) << dtype_name(dtype) << " K " << K;
    }
  // GGUF rows are whole blocks, unpadded (the file's bytes as they are).
  EXPECT_EQ(row_bytes(DType::kQ4_K, 2048), 8 * 144);
  EXPECT_EQ(row_bytes(DType::kQ5_K, 512), 2 * 176);
  EXPECT_EQ(row_bytes(DType::kQ8_0, 576), 18 * 34);
  EXPECT_EQ(row_bytes(DType::kF16, 10), 20);
  EXPECT_EQ(tensor_bytes(TensorType{DType::kI4G128_F16, {Dim::of(3), Dim::of(2048)}}), 3u * 1056);
  EXPECT_EQ(tensor_bytes(TensorType{DType::kQ6_K, {Dim::of(4), Dim::of(256)}}), 4u * 210);
  EXPECT_EQ(tensor_bytes(TensorType{DType::kBF16, {Dim::of(4), Dim::of(3)}}), 24u);
}

TEST(QuantFormat, RowLengthsAFormatCannotHoldAreNamed) {
  EXPECT_EQ(row_length_problem(DType::kI4G128_F16, 576), "rows of 576 elements are not a whole number of 128-element groups");
  EXPECT_EQ(row_length_problem(DType::kQ4_K, 576), "rows of 576 elements are not a whole number of 256-element q4_k blocks");
  EXPECT_EQ(row_length_problem(DType::kI4G64_F16, 576), "");
  EXPECT_EQ(row_length_problem(DType::kI8_F16, 7), "");
  EXPECT_NE(row_length_problem(DType::kI8_F16, 0), "");
  std::vector<float> x(576, 1.0f);
  std::vector<uint8_t> out(4096);
  const Status status = quantize_rows(DType::kI4G128_F16, x.data(), 1, 576, out.data());
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("not a whole number of 128-element groups"), std::string::npos) << status.to_string();
}

// The C++ quantizer and dequantizer reproduce the numpy implementation byte for byte and bit for bit.
TEST(QuantFormat, MatchesTheNumpyImplementationExactly) {
  const std::vector<float> input = read_f32(kFixtures + "input.f32");
  std::ifstream shape(kFixtures + "shape.txt");
  int64_t rows = 0, K = 0;
  shape >> rows >> K;
  ASSERT_EQ(static_cast<int64_t>(input.size()), rows * K);
  for (DType dtype : kRowFormats) {
    const std::string name(dtype_name(dtype));
    SCOPED_TRACE(name);
    const std::vector<uint8_t> expected = read_bytes(kFixtures + name + ".bin");
    ASSERT_EQ(static_cast<int64_t>(expected.size()), rows * row_bytes(dtype, K));
    std::vector<uint8_t> packed(expected.size(), 0xAB);
    QuantError err;
    ASSERT_TRUE(quantize_rows(dtype, input.data(), rows, K, packed.data(), &err).is_ok());
    for (size_t i = 0; i < packed.size(); ++i) ASSERT_EQ(packed[i], expected[i]) << "byte " << i;

    const std::vector<float> back = read_f32(kFixtures + name + ".f32");
    std::vector<float> got(back.size());
    ASSERT_TRUE(dequantize_rows(dtype, expected.data(), rows, K, got.data()).is_ok());
    double max_abs = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(bits(got[i]), bits(back[i])) << "element " << i << ": " << got[i] << " vs " << back[i];
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(input[i]) - got[i]));
    }
    EXPECT_DOUBLE_EQ(err.max_abs, max_abs);  // the reported error is the dequantized tensor's
    EXPECT_GT(err.rel_rms, 0.0);
  }
}

// Each int4 group's scale is searched (quant_rows.cpp): its squared error is never more than the plain
// scale's (max|x| / 7, or (hi − lo) / 15 with its zero point) would give, rounded to the scale type as
// stored. int8 rows keep round to nearest at max|x| / 127: every element within half a step. Zero stays
// zero in every format.
TEST(QuantFormat, TheScaleSearchNeverDoesWorseThanThePlainScale) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t rows = 8, K = 512;
  std::vector<float> x(static_cast<size_t>(rows * K));
  for (float& v : x) v = normal(rng) * 0.05f;
  x[3] = 0.0f;
  x[700] = 0.9f;  // an outlier in one group of row 1
  auto as_stored = [](DType scale, float v) {
    return scale == DType::kF16 ? half_to_float(float_to_half(v)) : bf16_to_float(float_to_bf16(v));
  };
  for (DType dtype : kRowFormats) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const QuantLayout layout = quant_layout(dtype);
    std::vector<uint8_t> packed(static_cast<size_t>(rows * row_bytes(dtype, K)));
    QuantError err;
    ASSERT_TRUE(quantize_rows(dtype, x.data(), rows, K, packed.data(), &err).is_ok());
    std::vector<float> back(x.size());
    ASSERT_TRUE(dequantize_rows(dtype, packed.data(), rows, K, back.data()).is_ok());
    const int64_t group = layout.group ? layout.group : K;
    int searched_better = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < K / group; ++g) {
        const float* v = x.data() + r * K + g * group;
        const float* w = back.data() + r * K + g * group;
        float lo = 0, hi = 0, amax = 0;
        for (int64_t i = 0; i < group; ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]), amax = std::max(amax, std::fabs(v[i]));
        double got = 0, plain = 0;
        for (int64_t i = 0; i < group; ++i) got += (double(v[i]) - w[i]) * (double(v[i]) - w[i]);
        if (layout.kind == QuantLayout::Kind::kInt8Channel) {
          const float s = as_stored(layout.scale, amax / 127.0f);
          for (int64_t i = 0; i < group; ++i) ASSERT_LE(std::fabs(v[i] - w[i]), 0.5f * s * 1.02f + 1e-7f) << "row " << r << " element " << i;
          continue;
        }
        if (layout.zero_points) {
          const float s = as_stored(layout.scale, (hi - lo) / 15.0f);
          const float z = std::min(std::max(std::nearbyint(-lo / s), 0.0f), 15.0f);
          for (int64_t i = 0; i < group; ++i) {
            const float q = s * (std::min(std::max(std::nearbyint(v[i] / s) + z, 0.0f), 15.0f) - z);
            plain += (double(v[i]) - q) * (double(v[i]) - q);
          }
        } else {
          const float s = as_stored(layout.scale, amax / 7.0f);
          for (int64_t i = 0; i < group; ++i) {
            const float q = s * std::min(std::max(std::nearbyint(v[i] / s), -8.0f), 7.0f);
            plain += (double(v[i]) - q) * (double(v[i]) - q);
          }
        }
        EXPECT_LE(got, plain * (1 + 1e-5) + 1e-12) << "row " << r << " group " << g;
        searched_better += got < plain * (1 - 1e-3);
      }
    EXPECT_EQ(back[3], 0.0f);
    if (layout.bits == 4) EXPECT_GT(searched_better, 0) << "no group found a better scale than the plain one";
    EXPECT_LT(err.rel_rms, layout.bits == 8 ? 0.02 : 0.15);  // int8: the outlier coarsens row 1's one scale
  }
}

TEST(QuantFormat, ValuesThatCannotBeQuantizedAreRefused) {
  std::vector<float> x(128, 0.5f);
  std::vector<uint8_t> out(4096);
  x[5] = std::nanf("");
  Status status = quantize_rows(DType::kI8_F16, x.data(), 1, 128, out.data());
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("element 5"), std::string::npos) << status.to_string();
  x[5] = 1e9f;  // a scale of 1e9 / 7 overflows f16, fits bf16
  status = quantize_rows(DType::kI4G128_F16, x.data(), 1, 128, out.data());
  EXPECT_NE(status.message().find("overflows f16; quantize with bf16 scales"), std::string::npos) << status.to_string();
  EXPECT_TRUE(quantize_rows(DType::kI4G128_BF16, x.data(), 1, 128, out.data()).is_ok());
  EXPECT_EQ(quantize_rows(DType::kQ4_K, x.data(), 1, 256, out.data()).code(), ErrorCode::kUnsupported);
  EXPECT_EQ(quantize_rows(DType::kF16, x.data(), 1, 128, out.data()).code(), ErrorCode::kUnsupported);
}

// Rows are independent: a run of rows dequantizes to the same values wherever it starts, which is what
// lets a parameter alias (rows of a fused weight) point into its source.
TEST(QuantFormat, RowsDequantizeIndependently) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t rows = 6, K = 256;
  std::vector<float> x(static_cast<size_t>(rows * K));
  for (float& v : x) v = uniform(rng);
  for (DType dtype : {DType::kI8_BF16, DType::kI4G64Z_F16}) {
    const int64_t rb = row_bytes(dtype, K);
    std::vector<uint8_t> packed(static_cast<size_t>(rows * rb));
    ASSERT_TRUE(quantize_rows(dtype, x.data(), rows, K, packed.data()).is_ok());
    std::vector<float> all(x.size()), part(static_cast<size_t>(2 * K));
    ASSERT_TRUE(dequantize_rows(dtype, packed.data(), rows, K, all.data()).is_ok());
    ASSERT_TRUE(dequantize_rows(dtype, packed.data() + 3 * rb, 2, K, part.data()).is_ok());
    for (int64_t i = 0; i < 2 * K; ++i) ASSERT_EQ(part[static_cast<size_t>(i)], all[static_cast<size_t>(3 * K + i)]);
  }
}

}  // namespace
}  // namespace agentcompile::ir
