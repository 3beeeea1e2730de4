// The IR text form: print -> parse round trips exactly (every op, every attr kind, real models),
// parse errors carry line:col and never crash, and the golden tiny-llama text stays as committed.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "frontend/model_builder.h"
#include "frontend/model_config.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::ir {
namespace {

// Hidden 64, 2 layers, 4 heads, 2 kv heads, vocab 512, llama3 rope scaling, untied lm_head.
constexpr const char* kTinyLlamaConfig = R"({
  "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512, "max_position_embeddings": 2048,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192},
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

// Qwen2 always carries q/k/v biases; tied embeddings, f16.
constexpr const char* kTinyQwen2Config = R"({
  "model_type": "qwen2", "hidden_size": 32, "intermediate_size": 96, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 1, "vocab_size": 100, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "tie_word_embeddings": true, "torch_dtype": "float16"})";

// Qwen3 with QK-norm and attention bias on every projection, f32.
constexpr const char* kTinyQwen3Config = R"({
  "model_type": "qwen3", "hidden_size": 48, "intermediate_size": 64, "num_hidden_layers": 1,
  "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 77,
  "attention_bias": true, "rope_theta": 10000, "torch_dtype": "float32"})";

Module build_from_json(const std::string& json_text, frontend::BuildOptions options = {}) {
  auto config = frontend::parse_hf_config(nlohmann::json::parse(json_text), "inline config");
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  if (!config) return {};
  auto module = frontend::build_module(*config, options);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return module ? *module : Module{};
}

Module build_from_file(const std::string& path) {
  auto config = frontend::read_hf_config(path);
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  if (!config) return {};
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return module ? *module : Module{};
}

// "line N:\n  expected: ...\n  actual:   ..." for the first line where two texts differ.
std::string first_difference(const std::string& expected, const std::string& actual) {
  std::istringstream e(expected), a(actual);
  std::string el, al;
  for (int line = 1;; ++line) {
    const bool has_e = static_cast<bool>(std::getline(e, el));
    const bool has_a = static_cast<bool>(std::getline(a, al));
    if (!has_e && !has_a) return "texts are identical";
    if (!has_e || !has_a || el != al)
      return "first difference at line " + std::to_string(line) + ":\n  expected: " + (has_e ? el : "<end of text>") +
             "\n  actual:   " + (has_a ? al : "<end of text>");
  }
}

// print -> parse gives back an equal module, and print -> parse -> print gives the same text.
void expect_round_trip(const Module& module) {
  const std::string text = print_module(module);
  auto parsed = parse_module(text, "round-trip");
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string() << "\n" << text.substr(0, 4000);
  const std::string reprinted = print_module(*parsed);
  EXPECT_EQ(reprinted, text) << first_difference(text, reprinted);
  EXPECT_TRUE(*parsed == module) << "parsed module differs from the original although the texts agree";
}

// A small module that uses every op and every attribute kind, built through FunctionBuilder.
Module all_ops_module() {
  Module m;
  m.name = "all_ops";
  auto tensor = [](DType dtype, Shape shape) { return TensorType{dtype, std::move(shape)}; };
  m.params = {{"emb", tensor(DType::kF16, {Dim::of(64), Dim::of(32)})},
              {"wq", tensor(DType::kF16, {Dim::of(64), Dim::of(32)})},
              {"w", tensor(DType::kF16, {Dim::of(48), Dim::of(32)})},
              {"b", tensor(DType::kF16, {Dim::of(48)})},
              {"norm", tensor(DType::kF16, {Dim::of(32)})}};
  m.states = {{"kv.0.k", tensor(DType::kF16, {Dim::L(), Dim::of(2), Dim::of(16)})},
              {"kv.0.v", tensor(DType::kF16, {Dim::L(), Dim::of(2), Dim::of(16)})}};

  FunctionBuilder b(m, "everything");
  const ValueId tokens = b.arg("tokens", tensor(DType::kI32, {Dim::T()}));
  const ValueId pos = b.arg("pos", tensor(DType::kI32, {}));
  const ValueId x = b.op(OpKind::kEmbedding, {b.weight("emb"), tokens});  // [T, 32]
  const ValueId w = b.weight("w");
  const ValueId l2 = b.op(OpKind::kLinear, {x, w});                        // [T, 48]
  const ValueId l3 = b.op(OpKind::kLinear, {x, w, b.weight("b")});         // [T, 48]
  ValueId p = b.op(OpKind::kAdd, {l2, l3});
  p = b.op(OpKind::kSub, {p, l3});
  p = b.op(OpKind::kMul, {p, l2});
  p = b.op(OpKind::kDiv, {p, l2});
  // Every attribute kind with awkward values; attributes outside an op's schema are allowed.
  p = b.op(OpKind::kSilu, {p},
           {{"a_eps", 1e-06},
            {"b_tenth", 0.1},
            {"c_scale", 1.0 / std::sqrt(128.0)},
            {"d_theta", 500000.0},
            {"e_negative", int64_t{-3}},
            {"f_negzero", -0.0},
            {"g_huge", 1e300},
            {"h_denormal", 5e-324},
            {"i_inf", HUGE_VAL},
            {"j_neginf", -HUGE_VAL},
            {"k_bigint", int64_t{-9223372036854775807LL - 1}},
            {"l_empty_dims", std::vector<Dim>{}},
            {"m_dims", std::vector<Dim>{Dim::T(), Dim::L(), Dim::of(0), Dim::of(-1)}},
            {"n_text", std::string("quote \" backslash \\ newline \n tab \t bell \x07 utf8 \xc3\xa9")},
            {"o_empty", std::string()},
            {"p_third", 1.0 / 3.0},
            {"weird key", int64_t{1}}});
  p = b.op(OpKind::kExp, {p});
  p = b.op(OpKind::kNeg, {p});
  const ValueId as_f32 = b.op(OpKind::kCast, {p}, {{"dtype", std::string("f32")}});
  const ValueId normed = b.op(OpKind::kRmsNorm, {x, b.weight("norm")}, {{"eps", 1e-06}});
  ValueId q = b.op(OpKind::kReshape, {b.op(OpKind::kLinear, {normed, b.weight("wq")})},
                   {{"shape", std::vector<Dim>{Dim::T(), Dim::of(4), Dim::of(16)}}});  // [T, 4, 16]
  ValueId k = b.op(OpKind::kReshape, {x}, {{"shape", std::vector<Dim>{Dim::T(), Dim::of(2), Dim::of(16)}}});
  const ValueId v = b.op(OpKind::kView, {x}, {{"shape", std::vector<Dim>{Dim::T(), Dim::of(2), Dim::of(16)}}});
  q = b.op(OpKind::kRope, {q, pos},
           {{"theta", 500000.0}, {"scaling", std::string("llama3")}, {"factor", 32.0}, {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0}, {"original_max_position", int64_t{8192}}});
  k = b.op(OpKind::kRope, {k, pos}, {{"theta", 10000.0}, {"scaling", std::string("none")}});
  const ValueId k_cache = b.op(OpKind::kKvAppend, {k, pos}, {{"state", std::string("kv.0.k")}});
  const ValueId v_cache = b.op(OpKind::kKvAppend, {v, pos}, {{"state", std::string("kv.0.v")}});
  const ValueId attn = b.op(OpKind::kAttention, {q, k_cache, v_cache, pos}, {{"scale", 1.0 / std::sqrt(16.0)}});
  const ValueId heads = b.op(OpKind::kTranspose, {attn}, {{"perm", std::vector<Dim>{Dim::of(1), Dim::of(0), Dim::of(2)}}});
  const ValueId keys = b.op(OpKind::kTranspose, {attn}, {{"perm", std::vector<Dim>{Dim::of(1), Dim::of(2), Dim::of(0)}}});
  const ValueId scores = b.op(OpKind::kMatmul, {heads, keys});  // [4, T, T]
  const ValueId probs = b.op(OpKind::kSoftmax, {scores}, {{"axis", int64_t{-1}}});
  const ValueId sum = b.op(OpKind::kReduceSum, {probs}, {{"axis", int64_t{-1}}, {"keepdim", int64_t{1}}});
  const ValueId max = b.op(OpKind::kReduceMax, {sum}, {{"axis", int64_t{1}}, {"keepdim", int64_t{0}}});
  const ValueId mean = b.op(OpKind::kReduceMean, {max}, {{"axis", int64_t{0}}});
  const ValueId last = b.op(OpKind::kSlice, {x}, {{"axis", int64_t{0}}, {"start", int64_t{-1}}, {"length", int64_t{1}}});
  const ValueId wide = b.op(OpKind::kBroadcast, {last}, {{"shape", std::vector<Dim>{Dim::T(), Dim::of(32)}}});
  const ValueId ids = b.op(OpKind::kArgmax, {wide}, {{"axis", int64_t{-1}}});
  b.result(as_f32);
  b.result(mean);
  b.result(ids);
  EXPECT_TRUE(b.finish().is_ok()) << b.status().to_string();

  FunctionBuilder c(m, "no_args");  // a function without arguments: `func @no_args() -> (...)`
  c.result(c.weight("norm"));
  EXPECT_TRUE(c.finish().is_ok()) << c.status().to_string();
  return m;
}

TEST(IrText, AllOpsModuleCoversEveryOp) {
  const Module m = all_ops_module();
  ASSERT_EQ(m.functions.size(), 2u);
  std::set<OpKind> used;
  for (const Node& node : m.functions[0].nodes) used.insert(node.op);
  for (int kind = 0; kind <= static_cast<int>(OpKind::kArgmax); ++kind)
    EXPECT_TRUE(used.count(static_cast<OpKind>(kind))) << "no node of op " << op_name(static_cast<OpKind>(kind));
  EXPECT_TRUE(verify_module(m).is_ok()) << verify_module(m).to_string();
}

TEST(IrText, AllOpsModuleRoundTrips) { expect_round_trip(all_ops_module()); }

TEST(IrText, PrintsTheDocumentedForm) {
  const std::string text = print_module(all_ops_module());
  EXPECT_NE(text.find("module all_ops {\n  param @emb : f16[64, 32]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  state @kv.0.k : f16[L, 2, 16]\n"), std::string::npos);
  EXPECT_NE(text.find("  func @everything(%tokens: i32[T], %pos: i32[]) -> (f32[T, 48], f16[1], i32[T]) {\n"),
            std::string::npos);
  EXPECT_NE(text.find("    %0 = weight {name = \"emb\"} : f16[64, 32]\n"), std::string::npos);
  EXPECT_NE(text.find("    %1 = embedding(%0, %tokens) : f16[T, 32]\n"), std::string::npos);
  EXPECT_NE(text.find("a_eps = 1e-06, b_tenth = 0.1, c_scale = 0.08838834764831843, d_theta = 500000.0, "
                      "e_negative = -3, f_negzero = -0.0, g_huge = 1e+300, h_denormal = 4.94066e-324, "
                      "i_inf = inf, j_neginf = -inf, k_bigint = -9223372036854775808, l_empty_dims = [], "
                      "m_dims = [T, L, 0, -1], n_text = \"quote \\\" backslash \\\\ newline \\n tab \\t bell \\x07 "
                      "utf8 \xc3\xa9\", o_empty = \"\", p_third = 0.3333333333333333, \"weird key\" = 1}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    return %"), std::string::npos);
  EXPECT_NE(text.find("  func @no_args() -> (f16[32]) {\n"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 2), "}\n");
}

TEST(IrText, DoublesRoundTripBitExact) {
  const double values[] = {1e-06, 1e-05, 0.1, 0.2, 0.3, 1.0 / std::sqrt(128.0), 1.0 / std::sqrt(64.0), 500000.0,
                           1000000.0, 10000.0, 1.0 / 3.0, 2.0 / 3.0, -0.0, 0.0, 1.0, -1.5, 1e300, -1e-300,
                           5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 123456789.0, 0.02,
                           3.141592653589793, HUGE_VAL, -HUGE_VAL};
  for (double value : values) {
    Module m;
    m.name = "d";
    m.params = {{"p", TensorType{DType::kF32, {Dim::of(2)}}}};
    FunctionBuilder b(m, "f");
    b.result(b.op(OpKind::kRmsNorm, {b.arg("x", TensorType{DType::kF32, {Dim::of(2)}}), b.weight("p")},
                  {{"eps", value}}));
    ASSERT_TRUE(b.finish().is_ok());
    auto parsed = parse_module(print_module(m));
    ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
    const double back = parsed->functions[0].nodes[1].float_attr("eps", 42.0);
    EXPECT_EQ(std::memcmp(&back, &value, sizeof(double)), 0) << attr_to_string(value) << " came back as " << back;
    EXPECT_TRUE(*parsed == m) << attr_to_string(value);
  }
}

TEST(IrText, NanSurvivesAsNan) {
  // A NaN attribute comes back as NaN of the same sign, and modules holding one compare equal after a round
  // trip (attributes compare as bits, NaNs by sign), as a captured NaN constant needs.
  auto parsed = parse_module("module m { func @f(%x: f32[]) -> (f32[]) {\n %0 = neg(%x) {a = nan, b = -nan} : f32[]\n"
                             " return %0 } }");
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  const Node& node = parsed->functions[0].nodes[0];
  EXPECT_TRUE(std::isnan(node.float_attr("a")));
  EXPECT_TRUE(std::isnan(node.float_attr("b")));
  EXPECT_EQ(attr_to_string(node.attrs.at("a")), "nan");
  auto again = parse_module(print_module(*parsed));
  ASSERT_TRUE(again.has_value()) << again.status().to_string();
  EXPECT_TRUE(*again == *parsed);
}

TEST(IrText, IntsAndFloatsAreDistinguished) {
  auto parsed = parse_module("module m { func @f(%x: f32[]) -> (f32[]) {\n"
                             "  %0 = neg(%x) {a = 1, b = 1.0, c = 1e3, d = 1E3, e = -7, f = inf, g = -inf} : f32[]\n"
                             "  return %0\n} }");
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  const Attrs& attrs = parsed->functions[0].nodes[0].attrs;
  EXPECT_TRUE(std::holds_alternative<int64_t>(attrs.at("a")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(attrs.at("e")));
  EXPECT_EQ(std::get<int64_t>(attrs.at("e")), -7);
  for (const char* key : {"b", "c", "d", "f", "g"}) EXPECT_TRUE(std::holds_alternative<double>(attrs.at(key))) << key;
  EXPECT_EQ(std::get<double>(attrs.at("c")), 1000.0);
  EXPECT_EQ(std::get<double>(attrs.at("g")), -HUGE_VAL);
}

TEST(IrText, AcceptsEquivalentSpellings) {
  // Empty operand lists and attr maps, comments, and any order of declarations parse; printing normalizes.
  auto parsed = parse_module(
      "// a comment\nmodule m {\n  func @f() -> (f32[2]) {\n    %0 = weight() {name = \"p\"} : f32[2]\n"
      "    %1 = neg(%0) {} : f32[2]  // trailing comment\n    return %1\n  }\n  param @p : f32[2]\n}\n");
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  EXPECT_TRUE(verify_module(*parsed).is_ok()) << verify_module(*parsed).to_string();
  EXPECT_EQ(print_module(*parsed),
            "module m {\n  param @p : f32[2]\n  func @f() -> (f32[2]) {\n    %0 = weight {name = \"p\"} : f32[2]\n"
            "    %1 = neg(%0) : f32[2]\n    return %1\n  }\n}\n");
}

TEST(IrText, UnusualNamesAreQuotedAndRoundTrip) {
  Module m = all_ops_module();
  m.name = "llama-3.2 1b";
  Function& f = m.functions[0];
  f.name = "with space";
  f.values[static_cast<size_t>(f.args[0])].name = "token ids";
  f.values[5].name = "x.y_z";  // plain: printed bare
  f.values[6].name = "";       // empty: printed as %""
  m.params[0].name = "emb\"quoted\"";
  f.nodes[0].attrs["name"] = m.params[0].name;
  expect_round_trip(m);
  const std::string text = print_module(m);
  EXPECT_NE(text.find("module \"llama-3.2 1b\" {"), std::string::npos);
  EXPECT_NE(text.find("func @\"with space\"(%\"token ids\": i32[T]"), std::string::npos);
  EXPECT_NE(text.find("param @\"emb\\\"quoted\\\"\" : f16[64, 32]"), std::string::npos);
  EXPECT_NE(text.find("%x.y_z = "), std::string::npos);
  EXPECT_NE(text.find("%\"\" = "), std::string::npos);
}

TEST(IrText, PrintFunctionMatchesTheModuleBody) {
  const Module m = all_ops_module();
  const std::string function_text = print_function(m.functions[1]);
  EXPECT_EQ(function_text,
            "func @no_args() -> (f16[32]) {\n  %0 = weight {name = \"norm\"} : f16[32]\n  return %0\n}\n");
}

TEST(IrText, MalformedModulesStillPrint) {
  Module m = all_ops_module();
  m.functions[0].nodes[3].operands[0] = 9999;
  m.functions[0].results.push_back(-1);
  const std::string text = print_module(m);
  EXPECT_NE(text.find("%<undefined value 9999>"), std::string::npos);
  auto parsed = parse_module(text);
  ASSERT_FALSE(parsed.has_value());
  EXPECT_EQ(parsed.status().code(), ErrorCode::kParse);
}

TEST(IrText, TinyConfigsRoundTripAndVerify) {
  for (const char* config : {kTinyLlamaConfig, kTinyQwen2Config, kTinyQwen3Config}) {
    for (bool all_logits : {false, true}) {
      frontend::BuildOptions options;
      options.prefill_all_logits = all_logits;
      const Module m = build_from_json(config, options);
      ASSERT_EQ(m.functions.size(), 2u) << config;
      EXPECT_TRUE(verify_module(m).is_ok()) << verify_module(m).to_string();
      expect_round_trip(m);
    }
  }
  // The qwen2 text carries the biases, the untied llama text its lm_head and llama3 rope attrs.
  const std::string qwen2 = print_module(build_from_json(kTinyQwen2Config));
  EXPECT_NE(qwen2.find("param @model.layers.1.self_attn.v_proj.bias : f16[8]"), std::string::npos);
  EXPECT_NE(qwen2.find("{name = \"model.layers.0.self_attn.q_proj.bias\"}"), std::string::npos);
  const std::string llama = print_module(build_from_json(kTinyLlamaConfig));
  EXPECT_NE(llama.find("param @lm_head.weight : bf16[512, 64]"), std::string::npos);
  EXPECT_NE(llama.find("scaling = \"llama3\""), std::string::npos);
}

TEST(IrText, RealConfigsRoundTripAndVerify) {
  for (const char* name : {"qwen3-1.7b.json", "llama-3.2-1b.json"}) {
    const Module m = build_from_file(std::string(AC_SOURCE_DIR) + "/configs/" + name);
    ASSERT_EQ(m.functions.size(), 2u) << name;
    EXPECT_TRUE(verify_module(m).is_ok()) << name << ": " << verify_module(m).to_string();
    expect_round_trip(m);
    auto parsed = parse_module(print_module(m), name);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_TRUE(verify_module(*parsed).is_ok()) << verify_module(*parsed).to_string();
  }
}

struct BadInput {
  std::string text;
  int line;
  int col;
  const char* message;  // a substring of the error
};

TEST(IrText, ParseErrorsNameLineAndColumn) {
  const std::string fn = "module m {\n  param @p : f32[2]\n  func @f(%x: f32[2]) -> (f32[2]) {\n";
  const BadInput cases[] = {
      {"", 1, 1, "expected 'module', got end of input"},
      {"modul m {}", 1, 1, "expected 'module'"},
      {"module {}", 1, 8, "expected the module name"},
      {"module m {", 1, 11, "expected 'param', 'state', 'func' or '}', got end of input"},
      {"module m {} extra", 1, 13, "expected end of input after the module"},
      {"module m {\n  param p : f32[2]\n}", 2, 9, "expected parameter name (@NAME)"},
      {"module m {\n  param @p : f17[2]\n}", 2, 14, "unknown dtype 'f17'"},
      {"module m {\n  param @p : f32 2\n}", 2, 18, "expected '[' after dtype f32"},
      {"module m {\n  param @p : f32[2, ]\n}", 2, 21, "expected a dimension (an integer, T or L)"},
      {"module m {\n  param @p : f32[2.5]\n}", 2, 18, "expected a dimension"},
      {"module m {\n  param @p : f32[X]\n}", 2, 18, "expected a dimension"},
      {"module m {\n  param @p : f32[2\n}", 3, 1, "expected ']'"},
      {"module m {\n  param @p : [2]\n}", 2, 14, "expected a type"},
      {"module m {\n  param @p : f32[99999999999999999999]\n}", 2, 18, "integer 99999999999999999999 is out of range"},
      {"module m {\n  state @s : f32[L, 2, 2] $\n}", 2, 27, "unexpected character '$'"},
      {"module m {\n  param @ : f32[2]\n}", 2, 9, "expected a name after '@'"},
      {"module m {\n  param @\"open : f32[2]\n}", 2, 10, "unterminated string"},
      {"module m {\n  param @\"a\\qb\" : f32[2]\n}", 2, 12, "unknown escape in string"},
      {"module m {\n  param @p : f32[1.2.3]\n}", 2, 18, "malformed number '1.2.'"},
      {"module m {\n  param @p : f32[1e]\n}", 2, 20, "expected digits in the exponent"},
      {"module m {\n  param @p : f32[-x]\n}", 2, 18, "expected a number after '-'"},
      {"module m {\n  func f() -> () {\n", 2, 8, "expected function name (@NAME)"},
      {"module m {\n  func @f(x: f32[]) -> () {\n", 2, 11, "expected an argument (%NAME: TYPE)"},
      {"module m {\n  func @f() (f32[]) {\n", 2, 13, "expected '->'"},
      {"module m {\n  func @f(%x: f32[], %x: f32[]) -> () {\n", 2, 22, "value %x is already defined (line 2)"},
      {(fn + "    %0 = frobnicate(%x) : f32[2]\n"), 4, 10, "unknown op 'frobnicate'"},
      {(fn + "    %0 = neg(%y) : f32[2]\n"), 4, 14, "undefined value %y in @f"},
      {(fn + "    %x = neg(%x) : f32[2]\n"), 4, 5, "value %x is already defined (line 3)"},
      {(fn + "    %0 = neg(%x) : f32[2]\n    %0 = neg(%0) : f32[2]\n"), 5, 5, "value %0 is already defined (line 4)"},
      {(fn + "    %0 = neg(%x) {a = 1, a = 2} : f32[2]\n"), 4, 26, "attribute 'a' is given twice"},
      {(fn + "    %0 = neg(%x) {a = T} : f32[2]\n"), 4, 23, "expected an attribute value"},
      {(fn + "    %0 = neg(%x) {a = 1e999} : f32[2]\n"), 4, 23, "float 1e999 is out of range"},
      {(fn + "    %0 = neg(%x) {a = \"x\ny\"} : f32[2]\n"), 4, 23, "unterminated string"},
      {(fn + "    %0 = neg(%x) {= 1} : f32[2]\n"), 4, 19, "expected an attribute name"},
      {(fn + "    %0 = neg(%x, ) : f32[2]\n"), 4, 18, "expected a value (%NAME)"},
      {(fn + "    %0 = neg(%x)\n    return %0\n"), 5, 5, "expected ':'"},
      {(fn + "    %0 = (%x) : f32[2]\n"), 4, 10, "expected an op name"},
      {(fn + "    %0 = neg(%x) : f32[2]\n  }\n}"), 5, 3, "expected a node (%NAME = ...) or 'return'"},
      {(fn + "    return %x, %x\n  }\n}"), 4, 5, "@f declares 1 results but returns 2"},
      {(fn + "    %0 = cast(%x) {dtype = \"f16\"} : f16[2]\n    return %0\n"), 5, 12,
       "return value %0 has type f16[2] but @f declares f32[2]"},
      {(fn + "    return %x\n"), 5, 1, "expected '}'"},
      {(fn + "    return %x\n  }\n"), 6, 1, "expected 'param', 'state', 'func' or '}', got end of input"},
  };
  for (const BadInput& bad : cases) {
    auto parsed = parse_module(bad.text, "bad.ir");
    ASSERT_FALSE(parsed.has_value()) << "parsed although malformed:\n" << bad.text;
    const Status& status = parsed.status();
    EXPECT_EQ(status.code(), ErrorCode::kParse) << status.to_string();
    const std::string where = "bad.ir:" + std::to_string(bad.line) + ":" + std::to_string(bad.col) + ": ";
    EXPECT_EQ(status.message().rfind(where, 0), 0u) << "expected " << where << "\n got " << status.message();
    EXPECT_NE(status.message().find(bad.message), std::string::npos)
        << "expected '" << bad.message << "'\n got " << status.message();
  }
}

// Every prefix and thousands of random byte edits of valid text parse or fail cleanly; whatever parses
// also verifies (or fails) cleanly and prints again.
TEST(IrText, MalformedInputNeverCrashes) {
  const std::string text = print_module(all_ops_module());
  for (size_t length = 0; length + 1 < text.size(); ++length) {  // all but the final newline
    auto parsed = parse_module(std::string_view(text).substr(0, length));
    ASSERT_FALSE(parsed.has_value()) << "prefix of length " << length << " parsed";
    EXPECT_EQ(parsed.status().code(), ErrorCode::kParse);
  }
  std::mt19937 rng(1234);
  const std::string alphabet = "%@[](){},:=->\"\\.0123456789eETLx_ \n/f";
  int parsed_count = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string mutated = text;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % mutated.size();
      switch (rng() % 4) {
        case 0: mutated[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: mutated.erase(at, 1 + rng() % 8); break;
        case 2: mutated.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: mutated[at] = static_cast<char>(rng() % 256); break;
      }
    }
    auto parsed = parse_module(mutated);
    if (!parsed) {
      EXPECT_EQ(parsed.status().code(), ErrorCode::kParse) << parsed.status().to_string();
      continue;
    }
    ++parsed_count;
    (void)verify_module(*parsed);
    EXPECT_FALSE(print_module(*parsed).empty());
  }
  EXPECT_GT(parsed_count, 0);  // some edits (inside strings, numbers) keep the text well formed
}

TEST(IrText, GoldenTinyLlama) {
  const std::string path = std::string(AC_SOURCE_DIR) + "/tests/golden/tiny_llama.ir";
  const Module m = build_from_json(kTinyLlamaConfig);
  const std::string actual = print_module(m);
  const char* update = std::getenv("AC_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(file.good()) << path << " is missing; run with AC_UPDATE_GOLDEN=1 to write it";
  const std::string expected((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(expected, actual) << path << " is stale (" << first_difference(expected, actual)
                              << ")\nrerun with AC_UPDATE_GOLDEN=1 if the change is intended";
  auto parsed = parse_module(expected, path);
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == m);
  EXPECT_TRUE(verify_module(*parsed).is_ok()) << verify_module(*parsed).to_string();
}

}  // namespace
}  // namespace agentcompile::ir
