// The batched-decode pass (ir/decode_batch.h) and the per-row forms of rope, kv_append and attention:
// one decode_batch call over sequences at different positions in their own cache slots gives, row by
// row, bit for bit what one-token decode calls give each sequence alone; its prompt-chunk form equals
// prefill; the text form round-trips; the verifier and the pass refuse what is not row-wise, by name.
#include "ir/decode_batch.h"

#include <gtest/gtest.h>

#include <map>

#include "ir/interpreter.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "model_fixtures.h"

namespace agentcompile::ir {
namespace {

// Deterministic weights in [-0.15, 0.15) (norms 1 +- 0.1), seeded by the tensor's name.
WeightLoader model_loader(const Module& module) {
  std::map<std::string, int64_t> sizes;
  for (const ParamDecl& p : module.params) sizes[p.name] = static_elements(p.type.shape);
  return [sizes](const std::string& name, std::vector<float>& out) {
    uint64_t z = 1469598103934665603ull;
    for (char c : name) z = (z ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    const bool norm = name.find("norm.weight") != std::string::npos;
    out.resize(static_cast<size_t>(sizes.at(name)));
    for (size_t i = 0; i < out.size(); ++i) {
      uint64_t x = z + i * 0x9E3779B97F4A7C15ull;
      x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
      x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
      x ^= x >> 31;
      const float u = static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0);  // [0, 1)
      out[i] = norm ? 0.9f + 0.2f * u : 0.3f * u - 0.15f;
    }
    return Status::ok();
  };
}

HostTensor ids(std::vector<int32_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return HostTensor::from_i32({n}, std::move(values));
}

std::vector<float> row(const HostTensor& logits, int64_t r) {
  const int64_t V = logits.shape[1];
  return std::vector<float>(logits.f32.begin() + r * V, logits.f32.begin() + (r + 1) * V);
}

Module batched(const std::string& config) {
  Module module = fixtures::tiny_model(config);
  Status status = add_decode_batch(module);
  EXPECT_TRUE(status.is_ok()) << status.to_string();
  return module;
}

class DecodeBatch : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeBatch, SignatureVerifiesAndRoundTrips) {
  const Module module = batched(GetParam());
  const Function* f = module.find_function(kDecodeBatchFunction);
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->args.size(), 3u);
  for (ValueId arg : f->args) EXPECT_EQ(f->type(arg).to_string(), "i32[T]");
  ASSERT_EQ(f->results.size(), 1u);
  const Function& decode = *module.find_function("decode");
  EXPECT_EQ(f->nodes.size(), decode.nodes.size());  // a rewrite, node for node
  Shape expected = decode.type(decode.results[0]).shape;
  expected[0] = Dim::T();
  EXPECT_EQ(f->type(f->results[0]).shape, expected);
  ASSERT_TRUE(verify_module(module).is_ok()) << verify_module(module).to_string();
  auto parsed = parse_module(print_module(module));
  ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
  EXPECT_TRUE(*parsed == module);
  // The pass adds the function once.
  Module again = module;
  ASSERT_TRUE(add_decode_batch(again).is_ok());
  EXPECT_EQ(again.functions.size(), module.functions.size());
}

// Three sequences in slots of `context` rows of one cache: prompts read by decode_batch in its chunk form
// (one call per prompt), then batched steps over all three at their different positions. A second
// interpreter runs each sequence alone with prefill and one-token decode; every row must match it bit
// for bit (the interpreter's sums do not depend on how many rows a call has).
TEST_P(DecodeBatch, RowsEqualSequencesRunAlone) {
  const Module module = batched(GetParam());
  constexpr int64_t kContext = 16;
  const std::vector<std::vector<int32_t>> prompts{{3, 17, 42, 8, 1}, {5, 9}, {11, 4, 60, 2, 33, 7, 19}};
  const int64_t slots = static_cast<int64_t>(prompts.size());
  Interpreter batch(module, model_loader(module), InterpreterOptions{slots * kContext, 2});
  std::vector<int32_t> last(prompts.size());
  std::vector<int32_t> position(prompts.size());

  // Prompt chunks: decode_batch with pos 0..n-1 and one base must equal prefill's rows.
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto n = static_cast<int32_t>(prompts[s].size());
    std::vector<int32_t> pos(n), base(n, static_cast<int32_t>(s * kContext));
    for (int32_t i = 0; i < n; ++i) pos[i] = i;
    auto out = batch.run(kDecodeBatchFunction, {ids(prompts[s]), ids(pos), ids(base)});
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    ASSERT_EQ((*out)[0].shape[0], n);
    Interpreter alone(module, model_loader(module), InterpreterOptions{kContext, 2});
    auto prefill = alone.run("prefill", {ids(prompts[s]), HostTensor::scalar_i32(0)});
    ASSERT_TRUE(prefill.has_value()) << prefill.status().to_string();
    EXPECT_EQ(row((*out)[0], n - 1), row((*prefill)[0], (*prefill)[0].shape[0] - 1)) << "sequence " << s;
    position[s] = n;
    last[s] = 1 + 7 * static_cast<int32_t>(s);
  }

  // Each sequence alone: the same prompt, then one-token decode of the same tokens.
  std::vector<std::unique_ptr<Interpreter>> alone;
  for (const auto& prompt : prompts) {
    alone.push_back(std::make_unique<Interpreter>(module, model_loader(module), InterpreterOptions{kContext, 2}));
    ASSERT_TRUE(alone.back()->run("prefill", {ids(prompt), HostTensor::scalar_i32(0)}).has_value());
  }
  for (int step = 0; step < 4; ++step) {
    // Rows in a different order than the slots, so a row's slot is not its index.
    const std::vector<size_t> order{2, 0, 1};
    std::vector<int32_t> tokens, pos, base;
    for (size_t s : order) {
      tokens.push_back(last[s]);
      pos.push_back(position[s]);
      base.push_back(static_cast<int32_t>(s * kContext));
    }
    auto out = batch.run(kDecodeBatchFunction, {ids(tokens), ids(pos), ids(base)});
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    for (size_t r = 0; r < order.size(); ++r) {
      const size_t s = order[r];
      auto single = alone[s]->run("decode", {ids({last[s]}), HostTensor::scalar_i32(position[s])});
      ASSERT_TRUE(single.has_value()) << single.status().to_string();
      const std::vector<float> expected = row((*single)[0], 0);
      ASSERT_EQ(row((*out)[0], static_cast<int64_t>(r)), expected) << "step " << step << ", sequence " << s;
      last[s] = static_cast<int32_t>(std::max_element(expected.begin(), expected.end()) - expected.begin());
      ++position[s];
    }
  }
}

TEST_P(DecodeBatch, RowsOutsideTheCacheAreErrors) {
  const Module module = batched(GetParam());
  Interpreter batch(module, model_loader(module), InterpreterOptions{8, 1});
  auto past = batch.run(kDecodeBatchFunction, {ids({1, 2}), ids({3, 4}), ids({0, 4})});  // row 4 + 4 = 8
  ASSERT_FALSE(past.has_value());
  EXPECT_NE(past.status().message().find("runs past the 8 rows"), std::string::npos) << past.status().message();
  auto negative = batch.run(kDecodeBatchFunction, {ids({1}), ids({-1}), ids({0})});
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.status().message().find("position -1 is negative"), std::string::npos) << negative.status().message();
}

INSTANTIATE_TEST_SUITE_P(TinyModels, DecodeBatch, ::testing::Values("tiny-llama.json", "tiny-qwen2.json", "tiny-qwen3.json"));

// A hand-written decode: position and layout rules the pass must keep or refuse.
const char* kDecodeTemplate = R"(module m {
  param @w : f32[8, 8]
  state @kv.k : f32[L, 2, 4]
  state @kv.v : f32[L, 2, 4]
  func @decode(%tokens: i32[1], %pos: i32[]) -> (RESULT) {
    %0 = weight {name = "w"} : f32[8, 8]
    %1 = embedding(%0, %tokens) : f32[1, 8]
    %2 = reshape(%1) {shape = [1, 2, 4]} : f32[1, 2, 4]
    %3 = rope(%2, %pos) {theta = 10000.0} : f32[1, 2, 4]
    %4 = kv_append(%3, %pos) {state = "kv.k"} : f32[L, 2, 4]
    %5 = kv_append(%2, %pos) {state = "kv.v"} : f32[L, 2, 4]
    %6 = attention(%3, %4, %5, %pos) {scale = 0.5} : f32[1, 2, 4]
    %7 = reshape(%6) {shape = [1, 8]} : f32[1, 8]
    %8 = TAIL : RESULT
    return %8
  }
})";

// `tail` is the last node, "op(operands) {attrs}", returning `result`.
Expected<Function> derive_with_tail(const std::string& tail, const std::string& result) {
  std::string text = kDecodeTemplate;
  text.replace(text.find("TAIL"), 4, tail);
  for (size_t at; (at = text.find("RESULT")) != std::string::npos;) text.replace(at, 6, result);
  auto module = parse_module(text);
  if (!module) return module.status();
  EXPECT_TRUE(verify_module(*module).is_ok()) << verify_module(*module).to_string();
  return derive_decode_batch(*module);
}

TEST(DecodeBatchPass, RowWiseTailsBatch) {
  auto f = derive_with_tail("softmax(%7) {axis = -1}", "f32[1, 8]");
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  EXPECT_EQ(print_function(*f).find("%base: i32[T]") != std::string::npos, true) << print_function(*f);
  EXPECT_NE(print_function(*f).find("attention(%3, %4, %5, %pos, %base)"), std::string::npos) << print_function(*f);
  EXPECT_NE(print_function(*f).find("kv_append(%3, %pos, %base)"), std::string::npos) << print_function(*f);
}

TEST(DecodeBatchPass, WhatCrossesRowsIsRefusedByName) {
  auto across = derive_with_tail("softmax(%7) {axis = 0}", "f32[1, 8]");
  ASSERT_FALSE(across.has_value());
  EXPECT_NE(across.status().message().find("%8 = softmax"), std::string::npos) << across.status().message();
  EXPECT_NE(across.status().message().find("axis 0"), std::string::npos) << across.status().message();
  auto flattened = derive_with_tail("reshape(%7) {shape = [8]}", "f32[8]");
  ASSERT_FALSE(flattened.has_value());
  EXPECT_NE(flattened.status().message().find("token dim"), std::string::npos) << flattened.status().message();
  auto moved = derive_with_tail("transpose(%7) {perm = [1, 0]}", "f32[8, 1]");
  ASSERT_FALSE(moved.has_value());
  EXPECT_NE(moved.status().message().find("%8 = transpose"), std::string::npos) << moved.status().message();
}

TEST(DecodeBatchPass, PositionOutsideRopeKvAttentionIsRefused) {
  auto f = derive_with_tail("cast(%pos) {dtype = \"f32\"}", "f32[]");
  ASSERT_FALSE(f.has_value());
  EXPECT_NE(f.status().message().find("reads the position %pos"), std::string::npos) << f.status().message();
}

TEST(DecodeBatchVerifier, AttentionAndItsAppendsAgreeOnRows) {
  const std::string head = R"(module m {
  state @kv.k : f32[L, 2, 4]
  state @kv.v : f32[L, 2, 4]
  func @f(%x: f32[T, 2, 4], %pos: i32[T], %base: i32[T], %other: i32[T], %p: i32[]) -> (f32[T, 2, 4]) {
)";
  auto verify = [&](const std::string& body) {
    auto module = parse_module(head + body + "  }\n}\n");
    EXPECT_TRUE(module.has_value()) << module.status().to_string();
    return module ? verify_module(*module) : module.status();
  };
  EXPECT_TRUE(verify("    %0 = kv_append(%x, %pos, %base) {state = \"kv.k\"} : f32[L, 2, 4]\n"
                     "    %1 = kv_append(%x, %pos, %base) {state = \"kv.v\"} : f32[L, 2, 4]\n"
                     "    %2 = attention(%x, %0, %1, %pos, %base) {scale = 0.5} : f32[T, 2, 4]\n    return %2\n")
                  .is_ok());
  const Status other_base = verify("    %0 = kv_append(%x, %pos, %other) {state = \"kv.k\"} : f32[L, 2, 4]\n"
                                   "    %1 = kv_append(%x, %pos, %base) {state = \"kv.v\"} : f32[L, 2, 4]\n"
                                   "    %2 = attention(%x, %0, %1, %pos, %base) {scale = 0.5} : f32[T, 2, 4]\n    return %2\n");
  EXPECT_NE(other_base.message().find("differ from those the kv_append of @kv.k"), std::string::npos) << other_base.to_string();
  const Status mixed = verify("    %0 = kv_append(%x, %p) {state = \"kv.k\"} : f32[L, 2, 4]\n"
                              "    %1 = kv_append(%x, %pos, %base) {state = \"kv.v\"} : f32[L, 2, 4]\n"
                              "    %2 = attention(%x, %0, %1, %pos, %base) {scale = 0.5} : f32[T, 2, 4]\n    return %2\n");
  EXPECT_NE(mixed.message().find("takes per-row positions but the kv_append of @kv.k does not"), std::string::npos)
      << mixed.to_string();
  const Status short_pos = verify("    %0 = rope(%x, %p) {theta = 10000.0} : f32[T, 2, 4]\n"
                                  "    %1 = kv_append(%0, %base) {state = \"kv.k\"} : f32[L, 2, 4]\n    return %0\n");
  EXPECT_NE(short_pos.message().find("pos must be i32[]"), std::string::npos) << short_pos.to_string();
}

}  // namespace
}  // namespace agentcompile::ir
