// The residual-norm prologue (analysis/regions.h): on the small Gemma-like graphs of
// sandwich_modules.h, a post-norm and its residual add join the next norm prologue's matmul region
// (golden listing), with h an output only where a later add reads it; the rule stays off for T
// rows, f32 activations and the ablation options; Qwen3 and Llama regions are the same with the
// rule on or off; the GEMV and cuBLAS families match the fused regions with the prologue's roles,
// and their candidates render and compile with NVRTC.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "golden.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "model_fixtures.h"
#include "plan/planner.h"
#include "sandwich_modules.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

ir::Module parse(const testing::SandwichShape& shape) {
  const std::string text = testing::sandwich_module(shape);
  auto module = ir::parse_module(text, "sandwich");
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << text;
  if (!module) return {};
  const Status verified = ir::verify_module(*module);
  EXPECT_TRUE(verified.is_ok()) << verified.message();
  return std::move(module).value();
}

const ir::Function& only_function(const ir::Module& module) { return module.functions.front(); }

// Each region as "kind: op op ... -> outputs", outputs by value name.
std::vector<std::string> shapes_of(const ir::Function& f, const analysis::RegionPartition& partition) {
  std::vector<std::string> out;
  for (const auto& region : partition.regions) {
    std::string line = std::string(analysis::region_kind_name(region.kind)) + ":";
    for (int n : region.nodes) line += " " + std::string(ir::op_name(f.nodes[static_cast<size_t>(n)].op));
    line += " ->";
    for (ir::ValueId v : region.outputs) line += " " + f.value(v).name;
    out.push_back(line);
  }
  return out;
}

TEST(ResidualNormPrologue, GemmaLikeDecodeIsGolden) {
  const ir::Module module = parse({});
  const ir::Function& decode = only_function(module);
  auto partition = analysis::form_regions(module, decode);
  auto unique = analysis::unique_regions(module, decode, partition, {1, 2048});
  testing::expect_golden("regions_sandwich_decode.txt", analysis::describe_regions(decode, partition, unique));
  // h is read by the second add: an output; h2 only by the final norm: internal.
  EXPECT_EQ(shapes_of(decode, partition),
            (std::vector<std::string>{
                "matmul: cast rmsnorm cast add cast rmsnorm cast linear linear gelu mul -> h m",
                "matmul: linear -> down",
                "matmul: cast rmsnorm cast add cast rmsnorm cast linear linear -> q_proj k_proj",
            }));
}

TEST(ResidualNormPrologue, FoldedNormsAndSameDtypeWeightsGroupAlike) {
  for (bool casts : {false, true})
    for (bool norm_f32 : {false, true})
      for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16}) {
        const ir::Module module = parse({.dtype = dtype, .K = 2048, .N = 8192, .norm_f32 = norm_f32, .casts = casts});
        auto partition = analysis::form_regions(module, only_function(module));
        ASSERT_EQ(partition.regions.size(), 3u) << "casts " << casts << " norm_f32 " << norm_f32;
        EXPECT_EQ(partition.regions[0].outputs.size(), 2u);  // h and m
        EXPECT_EQ(partition.regions[2].outputs.size(), 2u);  // q and k
      }
}

// Where the rule does not apply, the partition is the one without it: the post-norm and add stay a
// fusion region before the norm prologue's matmul.
TEST(ResidualNormPrologue, StaysOffForTRowsF32AndTheAblations) {
  const std::vector<std::string> apart = {
      "fusion: cast rmsnorm cast add -> h",
      "matmul: cast rmsnorm cast linear linear gelu mul -> m",
      "matmul: linear -> down",
      "fusion: cast rmsnorm cast add -> h2",
      "matmul: cast rmsnorm cast linear linear -> q_proj k_proj",
  };
  const ir::Module module = parse({});
  const ir::Function& decode = only_function(module);
  EXPECT_EQ(shapes_of(decode, analysis::form_regions(module, decode, {.residual_norm_prologue = false})), apart);
  // f32 activations: no GEMV runs them, the regions stay apart.
  const ir::Module f32 = parse({.dtype = ir::DType::kF32});
  EXPECT_EQ(shapes_of(only_function(f32), analysis::form_regions(f32, only_function(f32))), apart);
  // T rows: no norm prologue, so no residual-norm prologue either.
  const ir::Module prefill = parse({.rows = "T"});
  for (const auto& region : analysis::form_regions(prefill, only_function(prefill)).regions)
    if (region.kind == analysis::RegionKind::kMatmul) {
      EXPECT_EQ(only_function(prefill).nodes[static_cast<size_t>(region.nodes.front())].op, ir::OpKind::kLinear);
    }
  // Without norm prologues there is nothing to join.
  const auto bare = analysis::form_regions(module, decode, {.norm_prologue = false});
  for (const auto& region : bare.regions)
    if (region.kind == analysis::RegionKind::kMatmul) {
      EXPECT_EQ(decode.nodes[static_cast<size_t>(region.nodes.front())].op, ir::OpKind::kLinear);
    }
}

// Qwen3 and Llama have no sandwich norms: the rule changes none of their regions.
TEST(ResidualNormPrologue, QwenAndLlamaRegionsUnchanged) {
  for (const char* config : {"configs/qwen3-1.7b.json", "configs/llama-3.2-1b.json"}) {
    const ir::Module module = fixtures::module_from_config(config);
    for (const auto& function : module.functions) {
      const auto with = analysis::form_regions(module, function);
      const auto without = analysis::form_regions(module, function, {.residual_norm_prologue = false});
      ASSERT_EQ(with.regions.size(), without.regions.size()) << config << " " << function.name;
      for (size_t r = 0; r < with.regions.size(); ++r) {
        EXPECT_EQ(with.regions[r].nodes, without.regions[r].nodes) << config << " " << function.name << " r" << r;
        EXPECT_EQ(with.regions[r].outputs, without.regions[r].outputs) << config << " " << function.name << " r" << r;
      }
    }
  }
}

std::vector<plan::RegionPlan> plan_decode(const ir::Module& module, const std::string& device) {
  const ir::Function& decode = only_function(module);
  auto partition = analysis::form_regions(module, decode);
  auto unique = analysis::unique_regions(module, decode, partition, {1, 2048});
  return plan::plan_function(module, decode, partition, unique, *plan::named_device_profile(device), plan::PlannerOptions{});
}

TEST(ResidualNormPrologue, GemvAndCublasMatchWithThePrologueRoles) {
  const ir::Module module = parse({.dtype = ir::DType::kBF16});
  const auto plans = plan_decode(module, "h200");
  int fused = 0;
  for (const auto& plan : plans) {
    if (plan.summary.op_sequence.size() < 4 || plan.summary.op_sequence[3] != "add") continue;
    ++fused;
    EXPECT_EQ(plan.summary.category, analysis::Category::kGemvEpilogue);
    ASSERT_FALSE(plan.candidates.empty());
    EXPECT_EQ(plan.candidates.front().family, "gemv") << plan.candidates.front().name();
    bool library = false;
    for (const auto& c : plan.candidates) {
      library |= c.family == "cublas";
      const plan::Match& m = c.match;
      EXPECT_EQ(m.facts.at("post_norm"), 1) << c.name();
      EXPECT_EQ(m.facts.at("norm_f32"), 1) << c.name();
      EXPECT_EQ(m.roles.at("x"), "in0") << c.name();     // %o, the post-norm's input
      EXPECT_EQ(m.roles.at("skip"), "in1") << c.name();  // the residual stream
      EXPECT_EQ(m.roles.at("post_w"), "w0") << c.name();
      EXPECT_EQ(m.roles.at("norm_w"), "w1") << c.name();
      const bool gate_up = m.variant == "gate_up";
      EXPECT_EQ(m.variant, gate_up ? "gate_up" : "multi");
      // h is out0 of the gate/up region; the q/k region's h2 stays inside (no role, no write).
      EXPECT_EQ(m.roles.count("h"), gate_up ? 1u : 0u) << c.name();
      if (gate_up) {
        EXPECT_EQ(m.roles.at("h"), "out0");
      }
      EXPECT_NE(c.name().find("_rmsnorm_add_rmsnorm_"), std::string::npos) << c.name();
      auto source = codegen::render_source(c);
      ASSERT_TRUE(source.has_value()) << c.name() << ": " << source.status().to_string();
      if (c.family == "gemv") {
        EXPECT_NE(source->find("ac::kGemvResidualNorm"), std::string::npos) << *source;
        EXPECT_NE(source->find(gate_up ? "p.h = static_cast<__nv_bfloat16*>(a.out[0]);" : "p.h = nullptr;"), std::string::npos) << *source;
      } else {
        EXPECT_NE(source->find("ac::residual_norm_rows</*T=*/__nv_bfloat16, /*W=*/float, "), std::string::npos) << *source;
      }
    }
    EXPECT_TRUE(library) << "the cuBLAS fallback implements the prologue too";
  }
  EXPECT_EQ(fused, 2);
}

TEST(ResidualNormPrologue, CandidatesCompileWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::vector<codegen::CompileJob> jobs;
    for (const testing::SandwichShape& shape : {testing::SandwichShape{.dtype = ir::DType::kF16, .K = 2048, .N = 8192, .norm_f32 = false},
                                                testing::SandwichShape{.dtype = ir::DType::kBF16, .K = 1152, .N = 256}}) {
      const ir::Module module = parse(shape);
      for (const auto& plan : plan_decode(module, std::string(arch) == "sm_80" ? "a100" : "h200"))
        for (const auto& c : plan.candidates) {
          if (!c.match.facts.count("post_norm") || !codegen::has_generated_launch(c)) continue;
          auto source = codegen::render_source(c);
          ASSERT_TRUE(source.has_value()) << c.name() << ": " << source.status().to_string();
          jobs.push_back({c.name(), *source});
        }
    }
    ASSERT_GT(jobs.size(), 8u);
    testing::expect_nvrtc_compiles(jobs, arch);
  }
}

}  // namespace
}  // namespace agentcompile
