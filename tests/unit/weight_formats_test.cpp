// How a model's weights are stored in its module (frontend/weight_formats.h): GGUF blocks kept as
// they are by default and read natively by the reference interpreter with the same results as the
// dequantized path; a Hugging Face checkpoint quantized at compile time (--quantize), the logits'
// projection kept; and the refusals: a group size that does not divide K, --quantize on weights that
// are already quantized or on a captured module, --dequantize on anything but GGUF.
#include <cmath>
#include <cstdio>
#include <optional>
#include <cstring>

#include <gtest/gtest.h>

#include "frontend/model_source.h"
#include "frontend/weight_formats.h"
#include "golden.h"
#include "ir/interpreter.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::frontend {
namespace {

using ir::DType;

const std::string kFixtures = std::string(AC_SOURCE_DIR) + "/tests/fixtures/";

#define EXPECT_CONTAINS(text, fragment)                                    \
  do {                                                                     \
    const std::string text_ = (text);                                      \
    EXPECT_NE(text_.find(fragment), std::string::npos) << "in: " << text_; \
  } while (0)

WeightFormatOptions quantized(DType format) {
  WeightFormatOptions options;
  options.quantize = format;
  return options;
}

const ir::ParamDecl& param(const ir::Module& module, const std::string& name) {
  const ir::ParamDecl* p = module.find_param(name);
  EXPECT_NE(p, nullptr) << name;
  static const ir::ParamDecl none;
  return p ? *p : none;
}

TEST(QuantizeSpec, ParsesTheGrammarAndSpellsItBack) {
  const std::vector<std::pair<std::string, DType>> cases = {
      {"int8", DType::kI8_F16},          {"int8:bf16", DType::kI8_BF16},         {"int4", DType::kI4G128_F16},
      {"int4:g128", DType::kI4G128_F16}, {"int4:g32", DType::kI4G32_F16},        {"int4:g64:zp", DType::kI4G64Z_F16},
      {"int4:zp:bf16", DType::kI4G128Z_BF16}, {"int4:bf16:g32", DType::kI4G32_BF16}};
  for (const auto& [text, format] : cases) {
    auto parsed = parse_quantize_spec(text);
    ASSERT_TRUE(parsed) << text << ": " << parsed.status().to_string();
    EXPECT_EQ(*parsed, format) << text;
    EXPECT_EQ(parse_quantize_spec(quantize_spec_text(format)).value(), format);
  }
  EXPECT_EQ(quantize_spec_text(DType::kI4G64Z_BF16), "int4:g64:zp:bf16");
  EXPECT_EQ(quantized(DType::kI4G128_F16).tag(), "int4-g128");
  EXPECT_CONTAINS(parse_quantize_spec("int4:g256").status().message(), "the group size must be 32, 64 or 128, not 256");
  EXPECT_CONTAINS(parse_quantize_spec("int3").status().message(), "the format must be int8 or int4");
  EXPECT_CONTAINS(parse_quantize_spec("int8:g128").status().message(), "'g128' is not an option of int8");
  EXPECT_CONTAINS(parse_quantize_spec("int4:g64:g64").status().message(), "'g64' is not an option of int4 here");
  EXPECT_CONTAINS(parse_quantize_spec("int4:").status().message(), "expected int8[:bf16] or int4[:g32|:g64|:g128][:zp][:bf16]");
}

// GGUF blocks run as they are: matrices keep their types, embeddings of a quantized table name the
// float type they return, and the module prints to the committed golden form.
TEST(GgufNative, BlocksStayInTheirFormats) {
  auto source = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", false);
  ASSERT_TRUE(source) << source.status().to_string();
  auto module = source_module(*source);
  ASSERT_TRUE(module) << module.status().to_string();
  ASSERT_TRUE(ir::verify_module(*module).is_ok()) << ir::verify_module(*module).to_string();
  EXPECT_EQ(param(*module, "model.layers.0.self_attn.q_proj.weight").type.dtype, DType::kQ8_0);
  EXPECT_EQ(param(*module, "model.embed_tokens.weight").type.dtype, DType::kQ8_0);
  EXPECT_EQ(param(*module, "model.layers.0.self_attn.q_proj.bias").type.dtype, DType::kF16);  // F32 in the file
  EXPECT_EQ(param(*module, "model.norm.weight").type.dtype, DType::kF16);
  testing::expect_golden("tiny_llama_q8_0.ir", ir::print_module(*module));

  WeightFormatOptions dequantize;
  dequantize.dequantize = true;
  auto plain = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", false, dequantize);
  ASSERT_TRUE(plain) << plain.status().to_string();
  auto plain_module = source_module(*plain);
  ASSERT_TRUE(plain_module);
  for (const ir::ParamDecl& p : plain_module->params) EXPECT_EQ(p.type.dtype, DType::kF16) << p.name;
}

// On the GPU path, Q8_0 / Q4_0 / Q4_1 (and Q4_K, below) matrices that only linears read run as the row
// format holding their values (i8g32_f16 here, read by the qgemv family); a table an embedding reads, and
// Q5_K / Q6_K, are dequantized at load (no GPU kernel reads them), and a head tied to such a table reads a
// row-format copy of its own. The row formats are read as they are.
TEST(GgufNative, TheGpuPathRunsQ8_0LinearsAsRowsAndDequantizesTheTable) {
  auto gpu = weight_format_options("", false, /*gpu=*/true);
  ASSERT_TRUE(gpu.has_value());
  auto source = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", false, *gpu);
  ASSERT_TRUE(source) << source.status().to_string();
  auto module = source_module(*source);
  ASSERT_TRUE(module) << module.status().to_string();
  ASSERT_TRUE(ir::verify_module(*module).is_ok()) << ir::verify_module(*module).to_string();
  EXPECT_EQ(param(*module, "model.layers.0.self_attn.q_proj.weight").type.dtype, DType::kI8G32_F16);
  EXPECT_EQ(param(*module, "model.layers.0.mlp.down_proj.weight").type.dtype, DType::kI8G32_F16);
  EXPECT_EQ(param(*module, "model.embed_tokens.weight").type.dtype, DType::kF16);
  EXPECT_EQ(param(*module, "model.norm.weight").type.dtype, DType::kF16);
  // The head tied to the table reads a copy of its own in the row format, transcoded from the same blocks.
  const ir::ParamDecl& head = param(*module, "lm_head.weight");
  EXPECT_EQ(head.type.dtype, DType::kI8G32_F16);
  EXPECT_EQ(head.values_of, "model.embed_tokens.weight");
  EXPECT_FALSE(gpu_reads_natively(DType::kQ8_0));
  EXPECT_FALSE(gpu_reads_natively(DType::kQ4_K));
  EXPECT_TRUE(gpu_reads_natively(DType::kI8_BF16));
  EXPECT_TRUE(gpu_reads_natively(DType::kI4G64Z_F16));
  EXPECT_TRUE(gpu_reads_natively(DType::kI8G32_F16));
  EXPECT_TRUE(gpu_reads_natively(DType::kI4G32M_F16));
  // --dequantize --quantize: a GGUF file's blocks dequantized, then its linear weights quantized again.
  auto requantize = weight_format_options("int8", true, true);
  ASSERT_TRUE(requantize.has_value()) << requantize.status().to_string();
  EXPECT_EQ(requantize->tag(), "dequantized-int8");
  auto requantized = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", false, *requantize);
  ASSERT_TRUE(requantized) << requantized.status().to_string();
  auto requantized_module = source_module(*requantized);
  ASSERT_TRUE(requantized_module) << requantized_module.status().to_string();
  int int8_params = 0;
  for (const ir::ParamDecl& p : requantized_module->params) int8_params += p.type.dtype == DType::kI8_F16 || p.type.dtype == DType::kI8_BF16;
  EXPECT_GT(int8_params, 0) << "no linear weight was quantized again";
  EXPECT_CONTAINS(weight_format_options("int4:g48", false, true).status().message(), "the group size must be 32, 64 or 128, not 48");
  EXPECT_EQ(weight_format_options("int4:g64:bf16", false, false)->quantize, DType::kI4G64_BF16);
}

std::vector<float> run_prefill(const ModelSource& source, const ir::Module& module, const std::vector<int32_t>& prompt) {
  const InterpreterLoaders loaders = interpreter_loaders(*source.weights);
  ir::Interpreter interpreter(module, loaders.values, loaders.packed, ir::InterpreterOptions{16, 2});
  auto out = interpreter.run("prefill", {ir::HostTensor::from_i32({static_cast<int64_t>(prompt.size())}, prompt), ir::HostTensor::scalar_i32(0)});
  EXPECT_TRUE(out) << out.status().to_string();
  return out ? (*out)[0].f32 : std::vector<float>{};
}

// A fixture opened as the GPU path plans its weights, with the weights, and its module.
struct OpenedModel {
  ModelSource source;
  ir::Module module;
};

std::optional<OpenedModel> open_for_gpu(const std::string& fixture, const BuildOptions& build) {
  auto options = weight_format_options("", false, /*gpu=*/true);
  EXPECT_TRUE(options.has_value()) << options.status().to_string();
  if (!options) return std::nullopt;
  auto source = open_model(kFixtures + fixture, true, *options);
  EXPECT_TRUE(source) << source.status().to_string();
  if (!source) return std::nullopt;
  auto module = source_module(*source, build);
  EXPECT_TRUE(module) << module.status().to_string();
  if (!module) return std::nullopt;
  return OpenedModel{std::move(*source), std::move(*module)};
}

// The interpreter reading the blocks natively (llama's q/k rows moved back as whole rows of blocks)
// computes exactly what it computes from the dequantized f32 values: the same logits, bit for bit.
TEST(GgufNative, InterpreterAgreesWithTheDequantizedPathBitForBit) {
  WeightFormatOptions dequantize;
  dequantize.dequantize = true;
  auto native = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", true);
  auto plain = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", true, dequantize);
  ASSERT_TRUE(native && plain);
  BuildOptions all;
  all.prefill_all_logits = true;
  auto native_module = source_module(*native, all);
  auto plain_module = source_module(*plain, all);
  ASSERT_TRUE(native_module && plain_module);
  const std::vector<int32_t> prompt = {1, 5, 9, 14, 3};
  const std::vector<float> a = run_prefill(*native, *native_module, prompt);
  const std::vector<float> b = run_prefill(*plain, *plain_module, prompt);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  // The GPU path's module: its linears' blocks transcoded to i8g32_f16, the same values again.
  auto gpu = open_for_gpu("gguf/tiny_llama_q8_0.gguf", all);
  ASSERT_TRUE(gpu);
  EXPECT_EQ(param(gpu->module, "model.layers.0.self_attn.k_proj.weight").type.dtype, DType::kI8G32_F16);
  const std::vector<float> c = run_prefill(gpu->source, gpu->module, prompt);
  ASSERT_EQ(c.size(), a.size());
  EXPECT_EQ(std::memcmp(a.data(), c.data(), a.size() * 4), 0);
}

// Q4_K matrices on the GPU path run as i4g32m_f16 rows too (each sub-block a group, its scale d·sc and
// offset −dmin·m rounded to f16: ir::transcode_ggml_rows), and a head tied to a Q4_K table reads such a
// copy. The rounding moves the logits by far less than the 1e-2 the GPU path is held to.
TEST(GgufNative, TheGpuPathRunsQ4_KLinearsAsI4G32MRowsCloseToTheBlocks) {
  BuildOptions all;
  all.prefill_all_logits = true;
  auto native = open_model(kFixtures + "gguf/tiny_llama_q4_k.gguf", true);
  ASSERT_TRUE(native) << native.status().to_string();
  auto native_module = source_module(*native, all);
  ASSERT_TRUE(native_module) << native_module.status().to_string();
  EXPECT_EQ(param(*native_module, "model.layers.0.mlp.down_proj.weight").type.dtype, DType::kQ4_K);
  auto gpu = open_for_gpu("gguf/tiny_llama_q4_k.gguf", all);
  ASSERT_TRUE(gpu);
  ASSERT_TRUE(ir::verify_module(gpu->module).is_ok()) << ir::verify_module(gpu->module).to_string();
  for (const char* name : {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                           "model.layers.0.mlp.down_proj.weight", "lm_head.weight"})
    EXPECT_EQ(param(gpu->module, name).type.dtype, DType::kI4G32M_F16) << name;
  EXPECT_EQ(param(gpu->module, "lm_head.weight").values_of, "model.embed_tokens.weight");
  EXPECT_EQ(param(gpu->module, "model.embed_tokens.weight").type.dtype, DType::kF16);
  const std::vector<int32_t> prompt = {1, 5, 9, 14, 3};
  const std::vector<float> blocks = run_prefill(*native, *native_module, prompt);
  const std::vector<float> rows = run_prefill(gpu->source, gpu->module, prompt);
  ASSERT_EQ(rows.size(), blocks.size());
  ASSERT_FALSE(blocks.empty());
  float scale = 0, worst = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    scale = std::max(scale, std::fabs(blocks[i]));
    worst = std::max(worst, std::fabs(rows[i] - blocks[i]));
  }
  EXPECT_GT(scale, 0.f);
  EXPECT_LE(worst, 1e-3f * scale) << "max abs difference " << worst << " of logits up to " << scale;
  std::printf("Q4_K as i4g32m_f16: logits within %.3g of %.3g\n", worst, scale);
}

TEST(HfQuantize, LinearWeightsTakeTheFormatButNotTheLogitsProjection) {
  auto source = open_model(kFixtures + "models/tiny-qwen3", false, quantized(DType::kI4G32_F16));
  ASSERT_TRUE(source) << source.status().to_string();
  auto module = source_module(*source);
  ASSERT_TRUE(module) << module.status().to_string();
  ASSERT_TRUE(ir::verify_module(*module).is_ok()) << ir::verify_module(*module).to_string();
  for (const char* name : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                           "mlp.down_proj"})
    EXPECT_EQ(param(*module, std::string("model.layers.1.") + name + ".weight").type.dtype, DType::kI4G32_F16) << name;
  EXPECT_EQ(param(*module, "lm_head.weight").type.dtype, DType::kF32);
  EXPECT_EQ(param(*module, "model.embed_tokens.weight").type.dtype, DType::kF32);
  EXPECT_EQ(param(*module, "model.layers.0.self_attn.q_norm.weight").type.dtype, DType::kF32);
}

// int8 per channel changes the tiny model's logits by well under a percent of their range; the
// interpreter quantizes through read_packed on the fly, as the compiler does once for the artifact.
TEST(HfQuantize, Int8LogitsStayCloseToTheCheckpoints) {
  BuildOptions all;
  all.prefill_all_logits = true;
  auto plain = open_model(kFixtures + "models/tiny-qwen3", true);
  auto int8 = open_model(kFixtures + "models/tiny-qwen3", true, quantized(DType::kI8_F16));
  ASSERT_TRUE(plain && int8);
  const std::vector<int32_t> prompt = {3, 17, 200, 45, 9, 511};
  const std::vector<float> a = run_prefill(*plain, source_module(*plain, all).value(), prompt);
  const std::vector<float> b = run_prefill(*int8, source_module(*int8, all).value(), prompt);
  ASSERT_EQ(a.size(), b.size());
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_err = std::max(max_err, static_cast<double>(std::fabs(a[i] - b[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(a[i])));
  }
  EXPECT_GT(max_err, 0.0);  // the weights did change
  EXPECT_LT(max_err / max_ref, 0.02);
}

TEST(HfQuantize, ReadPackedQuantizesAndReportsTheError) {
  auto source = open_model(kFixtures + "models/tiny-llama", true);
  ASSERT_TRUE(source) << source.status().to_string();
  std::vector<uint8_t> bytes;
  ir::QuantError err;
  ASSERT_TRUE(read_packed(*source->weights, "model.layers.0.mlp.down_proj.weight", DType::kI4G64Z_BF16, bytes, &err).is_ok());
  EXPECT_EQ(bytes.size(), ir::tensor_bytes(ir::TensorType{DType::kI4G64Z_BF16, {ir::Dim::of(64), ir::Dim::of(128)}}));
  EXPECT_GT(err.rel_rms, 0.0);
  EXPECT_LT(err.rel_rms, 0.2);
  const Status wrong = read_packed(*source->weights, "model.layers.0.mlp.down_proj.weight", DType::kQ4_K, bytes);
  EXPECT_CONTAINS(wrong.message(), "not a whole number of 256-element q4_k blocks");
}

WeightFormatOptions head_in(DType format, std::optional<DType> body = std::nullopt) {
  WeightFormatOptions options;
  options.quantize = body;
  options.quantize_head = format;
  return options;
}

// The weight node each function's output projection (the linear whose result is returned) reads.
std::vector<std::string> head_weights(const ir::Module& module) {
  std::vector<std::string> names;
  for (const ir::Function& f : module.functions)
    for (const ir::Node& node : f.nodes) {
      if (node.op != ir::OpKind::kLinear) continue;
      bool returned = false;
      for (const ir::Node& user : f.nodes)
        if (user.op == ir::OpKind::kCast && user.operands[0] == node.result)
          for (ir::ValueId r : f.results) returned |= r == user.result;
      if (returned) names.push_back(f.nodes[static_cast<size_t>(f.value(node.operands[1]).producer)].string_attr("name"));
    }
  return names;
}

TEST(HfQuantizeHead, AnUntiedHeadTakesTheFormatItself) {
  auto source = open_model(kFixtures + "models/tiny-qwen3", false, head_in(DType::kI8_F16));
  ASSERT_TRUE(source) << source.status().to_string();
  auto module = source_module(*source);
  ASSERT_TRUE(module) << module.status().to_string();
  ASSERT_TRUE(ir::verify_module(*module).is_ok()) << ir::verify_module(*module).to_string();
  EXPECT_EQ(param(*module, "lm_head.weight").type.dtype, DType::kI8_F16);
  EXPECT_FALSE(param(*module, "lm_head.weight").is_copy());
  EXPECT_EQ(param(*module, "model.layers.0.mlp.down_proj.weight").type.dtype, DType::kF32);  // no --quantize: the rest as stored
  EXPECT_EQ(param(*module, "model.embed_tokens.weight").type.dtype, DType::kF32);
  EXPECT_EQ(head_in(DType::kI8_F16).tag(), "head-int8");
  EXPECT_EQ(head_in(DType::kI8_F16, DType::kI4G32_F16).tag(), "int4-g32-head-int8");
}

// tiny-qwen2 (f16) ties its head to the embedding table: the head reads a quantized copy of the table of
// its own (in prefill and decode), the embedding keeps gathering the f16 table, and the module's text
// round-trips with the copy.
TEST(HfQuantizeHead, ATiedHeadGetsAQuantizedCopyOfTheTable) {
  auto source = open_model(kFixtures + "models/tiny-qwen2", false, head_in(DType::kI8_F16, DType::kI4G32_F16));
  ASSERT_TRUE(source) << source.status().to_string();
  auto module = source_module(*source);
  ASSERT_TRUE(module) << module.status().to_string();
  ASSERT_TRUE(ir::verify_module(*module).is_ok()) << ir::verify_module(*module).to_string();
  const ir::ParamDecl& head = param(*module, "lm_head.weight");
  EXPECT_EQ(head.type.to_string(), "i8_f16[512, 64]");
  EXPECT_EQ(head.values_of, "model.embed_tokens.weight");
  EXPECT_EQ(head.checkpoint_name(), "model.embed_tokens.weight");
  EXPECT_EQ(param(*module, "model.embed_tokens.weight").type.dtype, DType::kF16);
  EXPECT_EQ(param(*module, "model.layers.0.mlp.up_proj.weight").type.dtype, DType::kI4G32_F16);
  EXPECT_EQ(head_weights(*module), (std::vector<std::string>{"lm_head.weight", "lm_head.weight"}));  // prefill, decode
  for (const ir::Function& f : module->functions)
    for (const ir::Node& node : f.nodes)
      if (node.op == ir::OpKind::kEmbedding)
        EXPECT_EQ(f.nodes[static_cast<size_t>(f.value(node.operands[0]).producer)].string_attr("name"), "model.embed_tokens.weight");
  const std::string text = ir::print_module(*module);
  EXPECT_CONTAINS(text, "param @lm_head.weight : i8_f16[512, 64] values @model.embed_tokens.weight");
  auto parsed = ir::parse_module(text);
  ASSERT_TRUE(parsed) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == *module);
}

// The interpreter reads the copy from the table's values (ParamDecl::checkpoint_name), quantized as
// a kernel reads it: the logits move by int8's rounding, no more.
TEST(HfQuantizeHead, TiedInt8HeadLogitsStayCloseToTheCheckpoints) {
  BuildOptions all;
  all.prefill_all_logits = true;
  auto plain = open_model(kFixtures + "models/tiny-qwen2", true);
  auto int8 = open_model(kFixtures + "models/tiny-qwen2", true, head_in(DType::kI8_F16));
  ASSERT_TRUE(plain && int8);
  const std::vector<int32_t> prompt = {3, 17, 200, 45, 9, 511};
  const std::vector<float> a = run_prefill(*plain, source_module(*plain, all).value(), prompt);
  const std::vector<float> b = run_prefill(*int8, source_module(*int8, all).value(), prompt);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_err = std::max(max_err, static_cast<double>(std::fabs(a[i] - b[i])));
    max_ref = std::max(max_ref, static_cast<double>(std::fabs(a[i])));
  }
  EXPECT_GT(max_err, 0.0);  // the head did change
  EXPECT_LT(max_err / max_ref, 0.02);
}

TEST(WeightFormatErrors, QuantizeHeadRefusals) {
  // A group size that does not divide the hidden size (64).
  auto g128 = open_model(kFixtures + "models/tiny-qwen2", false, head_in(DType::kI4G128_F16));
  ASSERT_FALSE(g128);
  EXPECT_CONTAINS(g128.status().message(), "--quantize-head int4:g128: the LM head @model.embed_tokens.weight f16[512, 64]: rows of 64 "
                                           "elements are not a whole number of 128-element groups (choose a group size that divides 64)");
  // A GGUF file whose blocks are quantized already, and a captured module.
  auto gguf = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", false, head_in(DType::kI8_F16));
  ASSERT_FALSE(gguf);
  EXPECT_CONTAINS(gguf.status().message(), "--quantize-head int8: this GGUF file is already quantized (q8_0)");
  auto captured = open_model(kFixtures + "captured/tiny-llama", false, head_in(DType::kI8_F16));
  ASSERT_FALSE(captured);
  EXPECT_CONTAINS(captured.status().message(), "--quantize and --quantize-head apply to Hugging Face checkpoints and GGUF files");
  EXPECT_CONTAINS(weight_format_options("", false, true, "int5").status().message(), "--quantize-head: --quantize 'int5': the format must be int8 or int4");
}

TEST(WeightFormatErrors, AGroupSizeThatDoesNotDivideKIsRefused) {
  auto source = open_model(kFixtures + "models/tiny-qwen3", false, quantized(DType::kI4G64_F16));
  ASSERT_FALSE(source);
  EXPECT_EQ(source.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_CONTAINS(source.status().message(), "model.layers.0.mlp.down_proj.weight f32[64, 96] cannot be stored as i4g64_f16: "
                                             "rows of 96 elements are not a whole number of 64-element groups (choose a group size "
                                             "that divides 96)");
}

TEST(WeightFormatErrors, QuantizingAQuantizedModelIsRefused) {
  auto gguf = open_model(kFixtures + "gguf/tiny_llama_q8_0.gguf", false, quantized(DType::kI8_F16));
  ASSERT_FALSE(gguf);
  EXPECT_CONTAINS(gguf.status().message(), "--quantize int8: this GGUF file is already quantized (q8_0)");
  // An unquantized GGUF file may be quantized like a checkpoint.
  auto f32_gguf = open_model(kFixtures + "gguf/tiny_llama.gguf", false, quantized(DType::kI8_F16));
  ASSERT_TRUE(f32_gguf) << f32_gguf.status().to_string();
  EXPECT_EQ(param(source_module(*f32_gguf).value(), "model.layers.0.mlp.up_proj.weight").type.dtype, DType::kI8_F16);
}

TEST(WeightFormatErrors, OptionsOutsideTheirFormatsAreRefused) {
  WeightFormatOptions dequantize;
  dequantize.dequantize = true;
  auto hf = open_model(kFixtures + "models/tiny-qwen3", false, dequantize);
  ASSERT_FALSE(hf);
  EXPECT_CONTAINS(hf.status().message(), "--dequantize applies to GGUF files");
  auto captured = open_model(kFixtures + "captured/tiny-llama", false, quantized(DType::kI8_F16));
  ASSERT_FALSE(captured);
  EXPECT_CONTAINS(captured.status().message(), "this is a module captured from PyTorch");
}

}  // namespace
}  // namespace agentcompile::frontend
