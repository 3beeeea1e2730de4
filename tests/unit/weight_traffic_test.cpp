// The weight bytes one decode step reads (analysis/weight_traffic.h): whole matrices in their declared
// formats (scales and padding included), one row of a table read only by embeddings; and the floor at
// a copy bandwidth.
#include <gtest/gtest.h>

#include <tuple>

#include "analysis/weight_traffic.h"
#include "frontend/model_builder.h"
#include "frontend/weight_formats.h"
#include "ir/quant.h"
#include "ir/text.h"

namespace agentcompile::analysis {
namespace {

TEST(WeightTraffic, MatricesWholeTablesByTheRow) {
  const std::string text =
      "module m {\n  param @t : f16[1000, 256]\n  param @w : i4g128_f16[512, 256]\n  param @u : f16[64, 256]\n"
      "  func @decode(%ids: i32[1]) -> (f16[1, 512], f16[1, 64]) {\n"
      "    %t = weight {name = \"t\"} : f16[1000, 256]\n    %h = embedding(%t, %ids) : f16[1, 256]\n"
      "    %w = weight {name = \"w\"} : i4g128_f16[512, 256]\n    %y = linear(%h, %w) : f16[1, 512]\n"
      "    %u = weight {name = \"u\"} : f16[64, 256]\n    %z = linear(%h, %u) : f16[1, 64]\n    return %y, %z\n  }\n}\n";
  auto module = ir::parse_module(text);
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const WeightTraffic t = weight_traffic(*module, "decode");
  // A row of 256 int4 elements: 128 bytes of nibbles and 2 f16 scales, padded to 144.
  EXPECT_EQ(ir::row_bytes(ir::DType::kI4G128_F16, 256), 144);
  EXPECT_DOUBLE_EQ(t.quantized_bytes, 512.0 * 144);
  EXPECT_EQ(t.quantized_params, 1);
  EXPECT_DOUBLE_EQ(t.bytes, 256.0 * 2 + 512.0 * 144 + 64.0 * 256 * 2);
  EXPECT_DOUBLE_EQ(weight_traffic(*module, "prefill").bytes, 0.0);  // no such function
  EXPECT_DOUBLE_EQ(floor_ms(4.8e9, 4800), 1.0);
  EXPECT_DOUBLE_EQ(floor_ms(1e9, 0), 0.0);
}

// Qwen3-1.7B's decode step (3.44 GB in f16): int4 g128 reads 39% of the f16 bytes and int8 59%, as the
// tied embedding, which is also the logits' projection (622 MB), keeps its dtype.
TEST(WeightTraffic, QuantizedQwen3ReadsFewerBytes) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/qwen3-1.7b.json");
  ASSERT_TRUE(config.has_value());
  config->dtype = ir::DType::kF16;
  const ir::Module f16 = frontend::build_module(*config).value();
  const double plain = weight_traffic(f16, "decode").bytes;
  EXPECT_GT(plain, 3.0e9);
  EXPECT_LT(plain, 4.2e9);
  for (const auto& [spec, least, most] : {std::tuple<std::string, double, double>{"int4:g128", 0.38, 0.40}, {"int8", 0.58, 0.60}}) {
    ir::Module module = f16;
    auto options = frontend::weight_format_options(spec, false, true);
    ASSERT_TRUE(options.has_value());
    ASSERT_TRUE(frontend::apply_weight_formats(module, {}, *options, "qwen3-1.7b").is_ok());
    const WeightTraffic t = weight_traffic(module, "decode");
    EXPECT_EQ(t.quantized_params, 196) << spec;
    EXPECT_LT(t.bytes / plain, most) << spec;
    EXPECT_GT(t.bytes / plain, least) << spec;
  }
}

}  // namespace
}  // namespace agentcompile::analysis
