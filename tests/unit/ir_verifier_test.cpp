// The verifier accepts the modules the builders make and rejects each broken invariant with a message
// that names the function, the value and what is wrong. Bad modules are made by editing a good one.
#include <cmath>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "frontend/model_builder.h"
#include "frontend/model_config.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::ir {
namespace {

constexpr const char* kTinyLlamaConfig = R"({
  "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512, "rms_norm_eps": 1e-05,
  "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192},
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

Module tiny_llama() {
  auto config = frontend::parse_hf_config(nlohmann::json::parse(kTinyLlamaConfig), "inline config");
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return *module;
}

Function& prefill(Module& m) { return m.functions[0]; }

// Index of the first node of `op` in prefill at or after node `from`.
size_t find_node(const Function& f, OpKind op, size_t from = 0) {
  for (size_t i = from; i < f.nodes.size(); ++i)
    if (f.nodes[i].op == op) return i;
  ADD_FAILURE() << "no " << op_name(op) << " node";
  return 0;
}

// Applies `edit` to a fresh valid module and expects verification to fail with every `needle`.
void expect_rejected(const std::function<void(Module&)>& edit, std::initializer_list<std::string> needles) {
  Module m = tiny_llama();
  edit(m);
  const Status status = verify_module(m);
  ASSERT_FALSE(status.is_ok()) << "verified although broken; expected: " << *needles.begin();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument) << status.to_string();
  for (const std::string& needle : needles)
    EXPECT_NE(status.message().find(needle), std::string::npos)
        << "expected '" << needle << "' in\n  " << status.message();
}

TEST(IrVerifier, BuiltModulesVerify) {
  const Module m = tiny_llama();
  EXPECT_TRUE(verify_module(m).is_ok()) << verify_module(m).to_string();
  for (const Function& f : m.functions) EXPECT_TRUE(verify_function(m, f).is_ok());
  for (const char* name : {"qwen3-1.7b.json", "llama-3.2-1b.json"}) {
    auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + name);
    ASSERT_TRUE(config.has_value()) << config.status().to_string();
    auto module = frontend::build_module(*config);
    ASSERT_TRUE(module.has_value()) << module.status().to_string();
    EXPECT_TRUE(verify_module(*module).is_ok()) << name << ": " << verify_module(*module).to_string();
  }
}

TEST(IrVerifier, OperandUsedBeforeDefinition) {
  expect_rejected(
      [](Module& m) {
        Function& f = prefill(m);
        const size_t add = find_node(f, OpKind::kAdd);
        f.nodes[add].operands[1] = f.nodes[add + 1].result;  // the next node's result
      },
      {"function @prefill", "%21 = add", "operand 1 (%22) is used before it is defined"});
}

TEST(IrVerifier, OperandOutOfRange) {
  expect_rejected([](Module& m) { prefill(m).nodes[3].operands[0] = 100000; },
                  {"function @prefill", "%3 = rmsnorm", "operand 0 (value #100000) is not a value of the function"});
}

TEST(IrVerifier, ValueDefinedTwice) {
  expect_rejected([](Module& m) { prefill(m).args.push_back(prefill(m).args[0]); },
                  {"function @prefill", "%tokens is defined 2 times"});
}

TEST(IrVerifier, ArgumentWithProducer) {
  expect_rejected([](Module& m) { prefill(m).values[1].producer = 4; },
                  {"function @prefill", "argument %pos claims node 4 as its producer"});
}

TEST(IrVerifier, InconsistentProducer) {
  expect_rejected([](Module& m) { prefill(m).values[prefill(m).nodes[5].result].producer = 6; },
                  {"function @prefill", "%5 is the result of node 5 but its producer is 6"});
}

TEST(IrVerifier, ValueNeverDefined) {
  expect_rejected(
      [](Module& m) {
        prefill(m).values.push_back(Value{"orphan", TensorType{DType::kF32, {}}, -1});
      },
      {"function @prefill", "%orphan is never defined"});
}

TEST(IrVerifier, DuplicateValueNames) {
  expect_rejected([](Module& m) { prefill(m).values[prefill(m).nodes[7].result].name = "pos"; },
                  {"function @prefill", "two values are named %pos"});
}

TEST(IrVerifier, DeclaredTypeDiffersFromInferred) {
  expect_rejected(
      [](Module& m) {
        Function& f = prefill(m);
        f.values[f.nodes[find_node(f, OpKind::kEmbedding)].result].type.shape[1] = Dim::of(65);
      },
      {"function @prefill", "%1 = embedding", "declared type bf16[T, 65] differs from inferred type bf16[T, 64]"});
}

TEST(IrVerifier, InferenceErrorsCarryTheValue) {
  expect_rejected(
      [](Module& m) {
        Function& f = prefill(m);
        f.nodes[find_node(f, OpKind::kRmsNorm)].attrs.erase("eps");
      },
      {"function @prefill", "%3 = rmsnorm", "missing attr eps"});
}

TEST(IrVerifier, WeightMustNameAParameter) {
  expect_rejected([](Module& m) { prefill(m).nodes[0].attrs["name"] = std::string("no.such.weight"); },
                  {"function @prefill", "%0 = weight", "no parameter named 'no.such.weight'"});
}

TEST(IrVerifier, AttrOfTheWrongKind) {
  expect_rejected(
      [](Module& m) {
        Function& f = prefill(m);
        f.nodes[find_node(f, OpKind::kSlice)].attrs["axis"] = std::string("0");
      },
      {"function @prefill", "= slice", "attr axis must be an integer, got a string \"0\""});
}

TEST(IrVerifier, UnknownOpKind) {
  expect_rejected([](Module& m) { prefill(m).nodes[2].op = static_cast<OpKind>(200); },
                  {"function @prefill", "node 2 has an unknown op kind 200"});
}

TEST(IrVerifier, NodeWithoutResult) {
  expect_rejected([](Module& m) { prefill(m).nodes[2].result = kNoValue; },
                  {"function @prefill", "node 2 (weight) has no result value"});
}

TEST(IrVerifier, ResultsMustExist) {
  expect_rejected([](Module& m) { prefill(m).results.clear(); }, {"function @prefill", "returns no results"});
  expect_rejected([](Module& m) { prefill(m).results.push_back(kNoValue); },
                  {"function @prefill", "result 1 (value #-1) is not a value of the function"});
}

TEST(IrVerifier, ArgumentTypes) {
  expect_rejected([](Module& m) { prefill(m).values[0].type.shape[0].symbol = static_cast<Symbol>(9); },
                  {"function @prefill", "%tokens", "unknown symbol"});
  expect_rejected([](Module& m) { prefill(m).values[0].type.shape[0] = Dim::of(-4); },
                  {"function @prefill", "%tokens : i32[-4]", "negative dimension -4"});
  expect_rejected([](Module& m) { prefill(m).values[1].type.dtype = DType::kQ4_0; },
                  {"function @prefill", "%pos : q4_0[]", "a weight format: only parameters and their weight nodes carry one"});
}

TEST(IrVerifier, ParamsAreStaticAndUnique) {
  expect_rejected([](Module& m) { m.params[1].type.shape[0] = Dim::T(); },
                  {"parameter @model.layers.0.input_layernorm.weight : bf16[T]", "must be static"});
  expect_rejected([](Module& m) { m.params.push_back(m.params[0]); },
                  {"two parameters are named @model.embed_tokens.weight"});
}

TEST(IrVerifier, StatesAreLByKvByD) {
  expect_rejected([](Module& m) { m.states[0].type.shape.pop_back(); },
                  {"state @kv.0.k : bf16[L, 2]", "must be [L, KV, D]"});
  expect_rejected([](Module& m) { m.states[0].type.shape[0] = Dim::of(128); },
                  {"state @kv.0.k : bf16[128, 2, 16]", "must be [L, KV, D]"});
  expect_rejected([](Module& m) { m.states.push_back(m.states[1]); }, {"two states are named @kv.0.v"});
}

TEST(IrVerifier, StateAppendedTwice) {
  expect_rejected(
      [](Module& m) {
        Function& f = prefill(m);
        const size_t first = find_node(f, OpKind::kKvAppend);
        f.nodes[first + 1].attrs["state"] = std::string("kv.0.k");  // v's append now targets k's cache again
      },
      {"function @prefill", "%16 = kv_append", "state @kv.0.k is written a second time"});
}

TEST(IrVerifier, AttentionReadsTheCache) {
  expect_rejected(
      [](Module& m) {
        Function& f = prefill(m);
        const size_t attention = find_node(f, OpKind::kAttention);
        // Read k and v from before their kv_append: same types, but not the cache.
        for (size_t i : {size_t{1}, size_t{2}})
          f.nodes[attention].operands[i] = f.nodes[static_cast<size_t>(f.value(f.nodes[attention].operands[i]).producer)].operands[0];
      },
      {"function @prefill", "%17 = attention", "k operand %14 must be the result of a kv_append (the cache), but is a rope"});
}

TEST(IrVerifier, FunctionNamesAreUnique) {
  expect_rejected([](Module& m) { m.functions[1].name = "prefill"; }, {"two functions are named @prefill"});
}

// Type inference must reject nonsense attributes, which parsed text can carry, without signed overflow:
// negative reshape sizes whose product matches, huge slice bounds, nan where an integer is read.
TEST(IrVerifier, InferenceRejectsNonsenseAttributes) {
  Module m;
  m.name = "m";
  FunctionBuilder reshape(m, "reshape");
  reshape.op(OpKind::kReshape, {reshape.arg("x", TensorType{DType::kF32, {Dim::of(4)}})},
             {{"shape", std::vector<Dim>{Dim::of(-2), Dim::of(-2)}}});
  EXPECT_NE(reshape.status().message().find("negative or overflowing"), std::string::npos) << reshape.status().message();

  FunctionBuilder huge(m, "huge");
  huge.op(OpKind::kReshape, {huge.arg("x", TensorType{DType::kF32, {Dim::of(4)}})},
          {{"shape", std::vector<Dim>{Dim::of(int64_t{1} << 62), Dim::of(4)}}});
  EXPECT_FALSE(huge.status().is_ok());

  FunctionBuilder slice(m, "slice");
  slice.op(OpKind::kSlice, {slice.arg("x", TensorType{DType::kF32, {Dim::of(4)}})},
           {{"axis", int64_t{0}}, {"start", int64_t{9223372036854775807LL}}, {"length", int64_t{2}}});
  EXPECT_NE(slice.status().message().find("out of range"), std::string::npos) << slice.status().message();

  FunctionBuilder from_end(m, "from_end");
  from_end.op(OpKind::kSlice, {from_end.arg("x", TensorType{DType::kF32, {Dim::T()}})},
              {{"axis", int64_t{0}}, {"start", int64_t{-9223372036854775807LL - 1}}, {"length", int64_t{1}}});
  EXPECT_TRUE(from_end.status().is_ok()) << from_end.status().message();

  FunctionBuilder nan_axis(m, "nan_axis");
  nan_axis.op(OpKind::kSoftmax, {nan_axis.arg("x", TensorType{DType::kF32, {Dim::of(4)}})}, {{"axis", std::nan("")}});
  EXPECT_TRUE(nan_axis.status().is_ok());  // a non-integral axis falls back to the default (-1)
}

TEST(IrVerifier, ParsedTextIsVerified) {
  // The parser records declared types as written; the verifier is what catches a wrong one.
  const std::string text =
      "module m {\n  param @p : f32[4]\n  func @f(%x: f32[T, 4]) -> (f32[T, 5]) {\n"
      "    %w = weight {name = \"p\"} : f32[4]\n    %y = rmsnorm(%x, %w) {eps = 1e-06} : f32[T, 5]\n"
      "    return %y\n  }\n}\n";
  auto parsed = parse_module(text);
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  const Status status = verify_module(*parsed);
  ASSERT_FALSE(status.is_ok());
  EXPECT_NE(status.message().find("function @f: %y = rmsnorm: declared type f32[T, 5] differs from inferred type f32[T, 4]"),
            std::string::npos)
      << status.message();
}

// The primitive ops' attributes are checked by kind like the semantic ops' (a reduction's axis is an
// integer, never a dim list), and parameter aliases must fit the parameter they name.
TEST(IrVerifier, PrimitiveAttributesAndAliasesAreChecked) {
  auto verify_text = [](const std::string& text) {
    auto parsed = parse_module(text);
    EXPECT_TRUE(parsed.has_value()) << parsed.status().to_string();
    return parsed ? verify_module(*parsed) : parsed.status();
  };
  for (const char* op : {"reduce_min", "reduce_prod", "argmin"}) {
    const std::string type = std::string(op) == "argmin" ? "i32[3]" : "f32[3]";
    const Status status = verify_text("module m {\n  func @f(%x: f32[3, 4]) -> (" + type + ") {\n    %y = " + op +
                                      "(%x) {axis = [1]} : " + type + "\n    return %y\n  }\n}\n");
    ASSERT_FALSE(status.is_ok()) << op;
    EXPECT_NE(status.message().find("attr axis must be an integer"), std::string::npos) << status.message();
  }
  const Status alias = verify_text("module m {\n  param @w : f16[8, 4]\n  param @a : f16[4, 4] alias @w row 6\n"
                                   "  func @f(%x: f32[1]) -> (f32[1]) {\n    return %x\n  }\n}\n");
  ASSERT_FALSE(alias.is_ok());
  EXPECT_NE(alias.message().find("from row 6 does not fit in f16[8, 4]"), std::string::npos) << alias.message();
}

}  // namespace
}  // namespace agentcompile::ir
