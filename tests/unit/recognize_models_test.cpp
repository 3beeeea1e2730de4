// Recognition on whole models: the graph builders' output is a fixed point; a graph torch.export
// captured from the same Hugging Face model raises to the builders' module byte for byte (source
// locations aside) and forms the same regions; architectures with no builder (Gemma-3, Phi-3,
// OLMo-2) raise to the golden modules under tests/golden/recognize/torch_export/*.raised.ir with no
// primitive op left but Gemma's embedding scale; raising is idempotent; an sdpa that is not over the
// cache is lowered to primitives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "analysis/recognize/recognize.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "frontend/model_builder.h"
#include "golden.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "model_fixtures.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

std::string source_path(const std::string& relative) { return std::string(AC_SOURCE_DIR) + "/" + relative; }

ir::Module parse_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path;
  std::stringstream text;
  text << in.rdbuf();
  auto module = ir::parse_module(text.str(), path);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return module ? std::move(module).value() : ir::Module{};
}

ir::Module captured(const std::string& name) { return parse_file(source_path("tests/golden/recognize/torch_export/" + name + ".ir")); }

ir::Module recognize(const ir::Module& module, analysis::RecognizeReport* report = nullptr) {
  auto raised = analysis::recognize_module(module, report);
  EXPECT_TRUE(raised.has_value()) << raised.status().to_string();
  return raised ? std::move(raised).value() : ir::Module{};
}

// The module as the builders print it: captured nodes carry source lines, built ones do not.
std::string print_without_locs(ir::Module module) {
  for (ir::Function& function : module.functions)
    for (ir::Node& node : function.nodes) node.loc.clear();
  return ir::print_module(module);
}

std::map<std::string, int> op_counts(const ir::Function& function) {
  std::map<std::string, int> counts;
  for (const ir::Node& node : function.nodes) ++counts[std::string(ir::op_name(node.op))];
  return counts;
}

std::string region_listing(const ir::Module& module, const std::string& function_name, ir::SymbolBindings bindings) {
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, bindings);
  return analysis::describe_regions(function, partition, unique);
}

std::vector<std::string> config_paths() {
  std::vector<std::string> paths;
  for (const char* dir : {"configs", "tests/fixtures/configs"}) {
    for (const auto& entry : fs::directory_iterator(source_path(dir))) {
      if (entry.path().extension() != ".json") continue;
      auto config = frontend::read_hf_config(entry.path());
      // Configs the builders do not take (architectures that are only captured) are not theirs to fix.
      if (config && frontend::build_module(*config)) paths.push_back(std::string(dir) + "/" + entry.path().filename().string());
    }
  }
  return paths;
}

TEST(RecognizeModels, BuilderOutputIsAFixedPoint) {
  const auto paths = config_paths();
  ASSERT_GE(paths.size(), 5u);
  for (const std::string& path : paths) {
    for (bool all_logits : {false, true}) {
      SCOPED_TRACE(path + (all_logits ? " (all logits)" : ""));
      auto config = frontend::read_hf_config(source_path(path));
      ASSERT_TRUE(config.has_value()) << config.status().to_string();
      frontend::BuildOptions options;
      options.prefill_all_logits = all_logits;
      auto built = frontend::build_module(*config, options);
      ASSERT_TRUE(built.has_value()) << built.status().to_string();
      analysis::RecognizeReport report;
      const ir::Module raised = recognize(*built, &report);
      EXPECT_EQ(ir::print_module(raised), ir::print_module(*built));
      EXPECT_TRUE(raised == *built);
      for (const auto& [pass, count] : report.fired) ADD_FAILURE() << pass << " fired " << count << " times";
      EXPECT_TRUE(report.notes.empty()) << report.notes.front();
    }
  }
}

// The acceptance test: the captured tiny Llama, Qwen2 and Qwen3 raise to exactly what the builder writes.
TEST(RecognizeModels, CapturedRaisesToTheBuiltModule) {
  for (const char* name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
    SCOPED_TRACE(name);
    const ir::Module built = fixtures::tiny_model(std::string(name) + ".json");
    analysis::RecognizeReport report;
    const ir::Module raised = recognize(captured(name), &report);
    EXPECT_EQ(print_without_locs(raised), ir::print_module(built));
    EXPECT_TRUE(report.notes.empty()) << report.notes.front();
    for (const char* function : {"prefill", "decode"})
      EXPECT_EQ(region_listing(raised, function, {7, 64}), region_listing(built, function, {7, 64})) << function;
  }
}

TEST(RecognizeModels, RaisedNodesCarryTheCapturedSourceLines) {
  const ir::Module raised = recognize(captured("tiny-qwen3"));
  int with_loc = 0;
  for (const ir::Node& node : raised.find_function("prefill")->nodes) {
    if (node.op == ir::OpKind::kRope || node.op == ir::OpKind::kAttention || node.op == ir::OpKind::kRmsNorm) {
      EXPECT_FALSE(node.loc.empty()) << ir::op_name(node.op);
      with_loc += !node.loc.empty();
    }
  }
  EXPECT_GT(with_loc, 10);
}

// Architectures no builder covers: what they raise to is a golden of its own.
TEST(RecognizeModels, ArchitecturesWithoutABuilder) {
  for (const char* name : {"tiny-gemma3", "tiny-phi3", "tiny-olmo2"}) {
    SCOPED_TRACE(name);
    analysis::RecognizeReport report;
    const ir::Module raised = recognize(captured(name), &report);
    ASSERT_TRUE(ir::verify_module(raised).is_ok());
    testing::expect_golden(std::string("recognize/torch_export/") + name + ".raised.ir", ir::print_module(raised));
    for (const char* function_name : {"prefill", "decode"}) {
      auto counts = op_counts(*raised.find_function(function_name));
      EXPECT_EQ(counts["attention"], 2);
      EXPECT_EQ(counts["kv_append"], 4);
      EXPECT_EQ(counts["rope"], 4);
      EXPECT_EQ(counts["linear"], 15);  // q, k, v, o, gate, up, down per layer; the LM head
      for (const char* primitive : {"sdpa", "index_copy", "matmul", "transpose", "concat", "pow", "rsqrt", "sigmoid", "tanh", "cos", "sin"})
        EXPECT_EQ(counts[primitive], 0) << function_name << " keeps " << primitive;
    }
  }
}

TEST(RecognizeModels, GemmaSpecifics) {
  analysis::RecognizeReport report;
  const ir::Module raised = recognize(captured("tiny-gemma3"), &report);
  // (1 + w) of every norm became an f32 parameter computed once by @init, in declaration order.
  const ir::Function* init = raised.find_function("init");
  ASSERT_NE(init, nullptr);
  std::vector<std::string> init_params;
  for (const ir::ParamDecl& param : raised.params)
    if (param.name.rfind("init.", 0) == 0) init_params.push_back(param.name);
  EXPECT_EQ(init_params.size(), 13u);  // 6 norms per layer (with q/k norms), the final norm
  ASSERT_EQ(init->results.size(), init_params.size());
  EXPECT_EQ(init_params.front(), "init.model.layers.0.input_layernorm.weight.0");
  // The sliding layer (0) attends within its window, the full one (1) does not; the local and global
  // rotary bases are told apart.
  std::vector<int64_t> windows;
  std::vector<double> thetas;
  for (const ir::Node& node : raised.find_function("prefill")->nodes) {
    if (node.op == ir::OpKind::kAttention) windows.push_back(node.int_attr("window", 0));
    if (node.op == ir::OpKind::kRope) thetas.push_back(node.float_attr("theta"));
  }
  EXPECT_EQ(windows, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(thetas, (std::vector<double>{10000.0, 10000.0, 1000000.0, 1000000.0}));
  // What stays primitive: the embedding's scale by sqrt(hidden) (a constant) in each function.
  ASSERT_EQ(report.notes.size(), 3u);
  EXPECT_NE(report.notes[0].find("constant x1"), std::string::npos) << report.notes[0];
}

TEST(RecognizeModels, PhiFusedProjectionsBecomeAliases) {
  const ir::Module raised = recognize(captured("tiny-phi3"));
  const ir::ParamDecl* k = raised.find_param("model.layers.0.self_attn.qkv_proj.weight.1");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->alias_of, "model.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(k->alias_row, 64);
  const ir::ParamDecl* up = raised.find_param("model.layers.1.mlp.gate_up_proj.weight.1");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ(up->alias_row, 128);
}

TEST(RecognizeModels, RaisingIsIdempotent) {
  for (const char* name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3", "tiny-phi3", "tiny-olmo2"}) {
    SCOPED_TRACE(name);
    const ir::Module once = recognize(captured(name));
    const ir::Module twice = recognize(once);
    EXPECT_EQ(ir::print_module(twice), ir::print_module(once));
  }
}

// The capture tool's own fixtures, once they land: every LM there raises to its builder's module
// when a builder exists, and to a verified module otherwise.
TEST(RecognizeModels, CaptureToolFixtures) {
  const fs::path root = source_path("tests/fixtures/captured");
  if (!fs::exists(root)) GTEST_SKIP() << root << " does not exist yet (the capture tool writes it)";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    const fs::path ir_path = entry.path() / "module.ir";
    if (!fs::exists(ir_path)) continue;
    SCOPED_TRACE(entry.path().string());
    const ir::Module raised = recognize(parse_file(ir_path.string()));
    ASSERT_TRUE(ir::verify_module(raised).is_ok());
    ++checked;
    auto config = frontend::read_hf_config(entry.path() / "config.json");
    if (!config) continue;
    auto built = frontend::build_module(*config);
    if (built) {
      EXPECT_EQ(print_without_locs(raised), ir::print_module(*built));
    }
  }
  EXPECT_GT(checked, 0);
}

// KernelBench's level-1 problem 97 (F.scaled_dot_product_attention of plain tensors): not the cache
// pattern, so it is lowered to primitives the generic families compile.
TEST(RecognizeModels, PlainSdpaIsLowered) {
  auto module = ir::parse_module(R"(module kb97 {
  func @forward(%q: f16[32, 32, 512, 1024], %k: f16[32, 32, 512, 1024], %v: f16[32, 32, 512, 1024]) -> (f16[32, 32, 512, 1024]) {
    %o = sdpa(%q, %k, %v) {causal = 0, gqa = 0, scale = 0.03125} : f16[32, 32, 512, 1024]
    return %o
  }
})");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  analysis::RecognizeReport report;
  const ir::Module raised = recognize(*module, &report);
  auto counts = op_counts(raised.functions[0]);
  EXPECT_EQ(counts["sdpa"], 0);
  EXPECT_EQ(counts["matmul"], 2);
  EXPECT_EQ(counts["softmax"], 1);
  ASSERT_EQ(report.notes.size(), 1u);
  EXPECT_NE(report.notes[0].find("matmul x2"), std::string::npos) << report.notes[0];
}

TEST(RecognizeModels, InvalidInputIsAnError) {
  ir::Module module = fixtures::tiny_model("tiny-qwen3.json");
  for (ir::Node& node : module.functions[0].nodes)
    if (node.op == ir::OpKind::kRmsNorm) node.attrs["eps"] = std::string("tiny");
  auto raised = analysis::recognize_module(module);
  ASSERT_FALSE(raised.has_value());
  EXPECT_NE(raised.status().to_string().find("input module"), std::string::npos) << raised.status().to_string();
}

}  // namespace
}  // namespace agentcompile
