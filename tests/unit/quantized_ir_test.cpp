// Quantized weights in the IR: the text form round-trips their types, the verifier keeps them to
// parameters read as a linear's weight or an embedding's table, and the reference interpreter
// dequantizes them exactly as the format defines: for GGUF's blocks, bit for bit what the gguf
// package's own `gguf.quants.dequantize` makes of them (tests/fixtures/gguf), for the row formats
// what the numpy implementation does (tests/fixtures/quant).
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include <gtest/gtest.h>

#include "frontend/gguf.h"
#include "golden.h"
#include "interpreter_ir.h"
#include "ir/quant.h"

namespace agentcompile::ir {
namespace {

using ir_test::f32;
using ir_test::i32;
using ir_test::module_text;
using ir_test::parse_ok;

#define EXPECT_CONTAINS(text, fragment)                                              \
  do {                                                                               \
    const std::string text_ = (text);                                                \
    EXPECT_NE(text_.find(fragment), std::string::npos) << "in: " << text_;           \
  } while (0)

const std::string kGguf = std::string(AC_SOURCE_DIR) + "/tests/fixtures/gguf/";
const std::string kQuant = std::string(AC_SOURCE_DIR) + "/tests/fixtures/quant/";

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

// One weight's stored bytes and the reference's dequantization of them.
struct StoredWeight {
  DType dtype;
  int64_t rows = 0, K = 0;
  std::vector<uint8_t> bytes;
  std::vector<float> reference;
};

// A module whose @f computes y = x @ w^T and e = w[ids] (an embedding of the same table), for a weight
// of `dtype` [rows, K].
std::string linear_and_embedding(DType dtype, int64_t rows, int64_t K) {
  const std::string w = std::string(dtype_name(dtype)) + "[" + std::to_string(rows) + ", " + std::to_string(K) + "]";
  const std::string n = std::to_string(rows), k = std::to_string(K);
  return module_text("(%x: f32[3, " + k + "], %ids: i32[2]) -> (f32[3, " + n + "], f16[2, " + k + "])",
                     "  %w = weight {name = \"w\"} : " + w + "\n"
                     "  %y = linear(%x, %w) : f32[3, " + n + "]\n"
                     "  %e = embedding(%w, %ids) {dtype = \"f16\"} : f16[2, " + k + "]\n"
                     "  return %y, %e",
                     "param @w : " + w + "\n");
}

// Runs the module twice: with the weight quantized (the interpreter dequantizes the stored bytes) and
// with the reference's f32 values as a plain f32 weight. The two must agree bit for bit.
void expect_interpreter_matches_reference(const StoredWeight& weight) {
  SCOPED_TRACE(std::string(dtype_name(weight.dtype)));
  const std::string text = linear_and_embedding(weight.dtype, weight.rows, weight.K);
  std::vector<float> x(static_cast<size_t>(3 * weight.K));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 23) / 11.0f - 1.0f;
  const std::vector<HostTensor> args = {f32({3, weight.K}, x), i32({2}, {static_cast<int32_t>(weight.rows - 1), 0})};

  Interpreter quantized(
      parse_ok(text), {},
      [&](const std::string& name, DType format, std::vector<uint8_t>& out) {
        EXPECT_EQ(name, "w");
        EXPECT_EQ(format, weight.dtype);
        out = weight.bytes;
        return Status::ok();
      },
      InterpreterOptions{8, 2});
  auto got = quantized.run("f", args);
  ASSERT_TRUE(got) << got.status().to_string();

  std::string plain = text;
  const std::string format(dtype_name(weight.dtype));
  for (size_t at; (at = plain.find(format + "[")) != std::string::npos;) plain.replace(at, format.size(), "f32");
  plain.replace(plain.find(" {dtype = \"f16\"} : f16"), std::strlen(" {dtype = \"f16\"} : f16"), " : f32");
  plain.replace(plain.find("f16[2, "), 3, "f32");
  Interpreter reference(
      parse_ok(plain), [&](const std::string&, std::vector<float>& out) { out = weight.reference; return Status::ok(); },
      InterpreterOptions{8, 2});
  auto want = reference.run("f", args);
  ASSERT_TRUE(want) << want.status().to_string();
  ASSERT_EQ(got->size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_EQ((*got)[r].f32.size(), (*want)[r].f32.size());
    EXPECT_EQ(std::memcmp((*got)[r].f32.data(), (*want)[r].f32.data(), (*got)[r].f32.size() * 4), 0) << "result " << r;
  }
}

TEST(QuantizedInterpreter, GgufBlocksDequantizeAsTheGgufPackageDoes) {
  auto file = frontend::GgufModelFile::open(kGguf + "quant_types.gguf");
  ASSERT_TRUE(file) << file.status().to_string();
  for (const char* name : {"q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k"}) {
    const frontend::GgufTensorInfo* tensor = (*file)->gguf().find_tensor(name);
    ASSERT_NE(tensor, nullptr) << name;
    StoredWeight weight{tensor->dtype, tensor->dims[1], tensor->dims[0], {}, {}};
    const uint8_t* bytes = (*file)->bytes(*tensor);
    weight.bytes.assign(bytes, bytes + tensor->bytes);
    weight.reference = read_f32(kGguf + "quant_types." + name + ".f32");  // gguf.quants.dequantize's
    expect_interpreter_matches_reference(weight);
  }
}

TEST(QuantizedInterpreter, RowFormatsDequantizeAsTheirDefinition) {
  std::ifstream shape(kQuant + "shape.txt");
  int64_t rows = 0, K = 0;
  shape >> rows >> K;
  for (DType dtype : {DType::kI8_F16, DType::kI8_BF16, DType::kI4G32_F16, DType::kI4G64_BF16, DType::kI4G128_F16,
                      DType::kI4G32Z_BF16, DType::kI4G128Z_F16}) {
    const std::string name(dtype_name(dtype));
    expect_interpreter_matches_reference({dtype, rows, K, read_bytes(kQuant + name + ".bin"), read_f32(kQuant + name + ".f32")});
  }
}

TEST(QuantizedInterpreter, StoredBytesOfTheWrongSizeAreRefused) {
  const std::string text = linear_and_embedding(DType::kI4G32_F16, 2, 64);
  Interpreter interpreter(
      parse_ok(text), {},
      [](const std::string&, DType, std::vector<uint8_t>& out) { out.assign(10, 0); return Status::ok(); }, InterpreterOptions{8, 2});
  auto out = interpreter.run("f", {f32({3, 64}, std::vector<float>(192, 1.0f)), i32({2}, {0, 1})});
  ASSERT_FALSE(out);
  EXPECT_CONTAINS(out.status().message(), "the loader gave 10 bytes, the format needs 96");
  Interpreter no_loader(parse_ok(text), {}, InterpreterOptions{8, 2});
  out = no_loader.run("f", {f32({3, 64}, std::vector<float>(192, 1.0f)), i32({2}, {0, 1})});
  ASSERT_FALSE(out);
  EXPECT_CONTAINS(out.status().message(), "no loader of quantized weights");
}

// Every weight format prints and parses back, in parameters, weight nodes and an embedding's attr.
TEST(QuantizedIrText, EveryFormatRoundTrips) {
  std::string decls = "  param @t : q4_k[4, 256]\n";
  std::string body = "    %t = weight {name = \"t\"} : q4_k[4, 256]\n    %h = embedding(%t, %ids) {dtype = \"bf16\"} : bf16[1, 256]\n";
  std::string results = "bf16[1, 256]", returned = "%h";
  int i = 0;
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kI8_F16,
                      DType::kI8_BF16, DType::kI4G32_F16, DType::kI4G32_BF16, DType::kI4G64_F16, DType::kI4G64_BF16,
                      DType::kI4G128_F16, DType::kI4G128_BF16, DType::kI4G32Z_F16, DType::kI4G32Z_BF16, DType::kI4G64Z_F16,
                      DType::kI4G64Z_BF16, DType::kI4G128Z_F16, DType::kI4G128Z_BF16}) {
    const std::string n = std::to_string(i++);
    const std::string type = std::string(dtype_name(dtype)) + "[8, 256]";
    decls += "  param @w" + n + " : " + type + "\n";
    body += "    %w" + n + " = weight {name = \"w" + n + "\"} : " + type + "\n";
    body += "    %y" + n + " = linear(%h, %w" + n + ") : bf16[1, 8]\n";
    results += ", bf16[1, 8]";
    returned += ", %y" + n;
  }
  const std::string text = "module m {\n" + decls + "  func @f(%ids: i32[1]) -> (" + results + ") {\n" + body + "    return " + returned +
                           "\n  }\n}\n";
  const Module module = parse_ok(text);
  EXPECT_EQ(print_module(module), text);
  testing::expect_golden("quantized_formats.ir", print_module(module));
}

std::string verify_error(const std::string& text) {
  auto module = parse_module(text);
  if (!module) return "parse: " + module.status().message();
  const Status status = verify_module(*module);
  return status.is_ok() ? "" : status.message();
}

TEST(QuantizedIrVerifier, QuantizedValuesAreWeightsReadByLinearOrEmbeddingOnly) {
  const std::string param = "param @w : i4g64_f16[4, 128]\n";
  const std::string weight = "  %w = weight {name = \"w\"} : i4g64_f16[4, 128]\n";
  EXPECT_CONTAINS(verify_error(module_text("(%x: f16[4, 128]) -> (f16[4, 128])", weight + "  %y = add(%x, %w) : f16[4, 128]\n  return %y", param)), "is a quantized weight, which only a linear's weight or an embedding's table may be");
  EXPECT_CONTAINS(verify_error(module_text("(%x: f16[1, 4]) -> (f16[1, 128])", weight + "  %y = linear(%w, %x) : f16[1, 128]\n  return %y", param)), "operand 0 (%w : i4g64_f16[4, 128]) is a quantized weight");
  EXPECT_CONTAINS(verify_error(module_text("(%x: i4g64_f16[4, 128]) -> (f16[1])", "  %y = constant {dtype = \"f16\", shape = [1], value = 0} : f16[1]\n  return %y")), "%x : i4g64_f16[4, 128] has dtype i4g64_f16, a weight format");
  EXPECT_CONTAINS(verify_error(module_text("() -> (i4g64_f16[4, 128])", weight + "  return %w", param)), "result 0 (%w) is a quantized weight");
  EXPECT_CONTAINS(verify_error(module_text("(%x: f16[1, 96]) -> (f16[1, 4])", "  %w = weight {name = \"w\"} : i4g64_f16[4, 96]\n  %y = linear(%x, %w) : f16[1, 4]\n  return %y",
                                     "param @w : i4g64_f16[4, 96]\n")), "parameter @w : i4g64_f16[4, 96] rows of 96 elements are not a whole number of 64-element groups");
  EXPECT_CONTAINS(verify_error(module_text("(%x: i32[1, 128]) -> (i32[1, 4])", weight + "  %y = linear(%x, %w) : i32[1, 4]\n  return %y", param)), "a quantized weight i4g64_f16[4, 128] multiplies float x");
}

TEST(QuantizedIrVerifier, AQuantizedTableNamesItsRowsFloatType) {
  const std::string param = "param @t : q8_0[16, 64]\nparam @p : f16[16, 64]\n";
  EXPECT_CONTAINS(verify_error(module_text("(%ids: i32[2]) -> (f16[2, 64])",
                                     "  %t = weight {name = \"t\"} : q8_0[16, 64]\n  %e = embedding(%t, %ids) : f16[2, 64]\n  return %e", param)), "a quantized table q8_0[16, 64] needs attr dtype");
  EXPECT_CONTAINS(verify_error(module_text("(%ids: i32[2]) -> (f16[2, 64])",
                                     "  %p = weight {name = \"p\"} : f16[16, 64]\n  %e = embedding(%p, %ids) {dtype = \"f16\"} : f16[2, 64]\n  return %e", param)), "attr dtype is for quantized tables");
  EXPECT_CONTAINS(verify_error(module_text("(%ids: i32[2]) -> (i32[2, 64])",
                                     "  %t = weight {name = \"t\"} : q8_0[16, 64]\n  %e = embedding(%t, %ids) {dtype = \"i32\"} : i32[2, 64]\n  return %e", param)), "attr dtype must be a float type");
  EXPECT_EQ(verify_error(module_text("(%ids: i32[2]) -> (bf16[2, 64])",
                                     "  %t = weight {name = \"t\"} : q8_0[16, 64]\n  %e = embedding(%t, %ids) {dtype = \"bf16\"} : bf16[2, 64]\n  return %e", param)),
            "");
}

}  // namespace
}  // namespace agentcompile::ir
