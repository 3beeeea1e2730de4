// What nothing recognizes still compiles, without a GPU: every module of primitive_modules.h (the
// KernelBench-style problems as primitive ops), in f32 and f16, forms regions that some template
// family implements on an H200 and on an A100 (a bounded, ranked space with one fallback per family,
// every launch within the device's limits), the families each problem needs are among them, and
// every candidate renders and compiles with NVRTC for sm_90a and sm_80. A region nothing implements
// is an error that names the op, its types and the model's source line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "plan/planner.h"
#include "primitive_modules.h"
#include "tune/region_cases.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

struct Planned {
  std::vector<plan::RegionPlan> plans;
  analysis::RegionPartition partition;
};

Planned plan_module(const ir::Module& module, const std::string& device) {
  const ir::Function& function = module.functions.front();
  Planned out;
  out.partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, out.partition, {64, 256});
  auto profile = plan::named_device_profile(device);
  out.plans = plan::plan_function(module, function, out.partition, unique, *profile, plan::PlannerOptions{});
  return out;
}

ir::Module parse(const testing::PrimitiveModule& m, ir::DType dtype) {
  auto module = ir::parse_module(testing::with_dtype(m.text, dtype), m.name);
  EXPECT_TRUE(module.has_value()) << m.name << ": " << module.status().to_string();
  return module ? std::move(module).value() : ir::Module{};
}

std::string label(const testing::PrimitiveModule& m, ir::DType dtype) { return m.name + " " + std::string(ir::dtype_name(dtype)); }

TEST(PrimitiveFamilies, EveryRegionOfEveryProblemIsImplemented) {
  for (const auto& m : testing::primitive_modules())
    for (ir::DType dtype : m.dtypes)
      for (const char* device : {"h200", "a100"}) {
        const ir::Module module = parse(m, dtype);
        if (module.functions.empty()) continue;
        const std::string where = label(m, dtype) + " on " + device + " (" + m.kernelbench + ")";
        const auto planned = plan_module(module, device);
        std::set<std::string> families;
        for (const auto& plan : planned.plans) {
          SCOPED_TRACE(where + " r" + std::to_string(plan.unique_id));
          ASSERT_FALSE(plan.candidates.empty()) << plan.unplanned_reason;
          EXPECT_TRUE(plan.unplanned_reason.empty());
          std::map<std::string, int> fallbacks;
          for (const auto& c : plan.candidates) {
            families.insert(c.family);
            fallbacks[c.family] += c.fallback;
            EXPECT_FALSE(c.notes.empty()) << c.name() << " has no reason for its rank";
            for (const auto& launch : c.launches) {
              if (launch.library) continue;
              EXPECT_LE(launch.block_x, 1024) << launch.kernel;
              EXPECT_EQ(launch.block_x % 32, 0) << launch.kernel;
              EXPECT_GE(launch.grid_x.at(64), 1) << launch.kernel;
              EXPECT_LT(launch.grid_y.at(64), 65536) << launch.kernel;
            }
          }
          for (const auto& [family, count] : fallbacks) EXPECT_LE(count, 1) << family << " offers two fallbacks";
          int with_fallback = 0;
          for (const auto& [family, count] : fallbacks) with_fallback += count;
          EXPECT_GE(with_fallback, 1) << "no fallback candidate";
          for (size_t i = 1; i < plan.candidates.size(); ++i) EXPECT_GE(plan.candidates[i - 1].score, plan.candidates[i].score);
        }
        for (const auto& family : m.families) EXPECT_TRUE(families.count(family)) << where << ": no region taken by " << family;
      }
}

// The regions the rules promise: one row op per fusion region, operand transposes inside the GEMM's
// region, epilogues with their GEMM, a reduction's readers in a region of their own.
// The admission reference of every region: cases build and the interpreter computes finite expected outputs
// of the declared sizes (the GPU test compares candidates against exactly these).
TEST(PrimitiveFamilies, EveryRegionHasAReference) {
  for (const auto& m : testing::primitive_modules())
    for (ir::DType dtype : m.dtypes) {
      const ir::Module module = parse(m, dtype);
      if (module.functions.empty()) continue;
      const ir::Function& function = module.functions.front();
      const auto partition = analysis::form_regions(module, function);
      for (const auto& region : partition.regions) {
        SCOPED_TRACE(label(m, dtype) + " region " + std::to_string(region.index));
        auto region_module = analysis::extract_region(module, function, region);
        ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
        auto cases = tune::build_region_cases(*region_module, tune::RegionBindings{1, 256, 0}, 1, {tune::Distribution::kNormal});
        ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
        auto layout = tune::region_layout(*region_module, tune::RegionBindings{1, 256, 0});
        ASSERT_TRUE(layout.has_value());
        for (const auto& c : *cases)
          for (size_t o = 0; o < c.expected_outputs.size(); ++o) {
            if (layout->output_state[o] >= 0) continue;
            int64_t elements = 1;
            for (int64_t d : layout->symbols.resolve(layout->outputs[o].shape)) elements *= d;
            EXPECT_EQ(static_cast<int64_t>(c.expected_outputs[o].values.size()), elements) << "output " << o;
          }
      }
    }
}

TEST(PrimitiveFamilies, RegionsFollowTheRules) {
  std::map<std::string, std::vector<std::string>> expected = {
      {"matmul_transposed", {"matmul: transpose transpose matmul"}},
      {"gemm_swish_clamp_tanh", {"matmul: linear sigmoid mul div clamp tanh gelu"}},
      {"gemm_gelu_softmax", {"matmul: linear gelu", "fusion: softmax"}},
      {"triu_matmul", {"matmul: matmul sub ge where"}},
      {"l2_norm", {"fusion: mul reduce_sum", "fusion: sqrt div"}},
      {"cumsum_reverse", {"copy: flip", "fusion: cumsum", "copy: flip"}},
      {"cumsum_exclusive", {"copy: slice", "fusion: cumsum", "copy: concat"}},
      {"cross_entropy", {"fusion: log_softmax", "gather: gather", "fusion: neg", "fusion: reduce_mean"}},
      {"frobenius", {"fusion: mul", "fusion: reduce_sum", "fusion: sqrt div"}},
  };
  for (const auto& m : testing::primitive_modules()) {
    auto it = expected.find(m.name);
    if (it == expected.end()) continue;
    const ir::Module module = parse(m, ir::DType::kF32);
    const ir::Function& f = module.functions.front();
    std::vector<std::string> regions;
    for (const auto& region : analysis::form_regions(module, f).regions) {
      std::string text = std::string(analysis::region_kind_name(region.kind)) + ":";
      for (int n : region.nodes) text += " " + std::string(ir::op_name(f.nodes[static_cast<size_t>(n)].op));
      regions.push_back(text);
    }
    EXPECT_EQ(regions, it->second) << m.name;
  }
}

TEST(PrimitiveFamilies, CandidatesCompileWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const auto& [arch, device] : {std::pair{"sm_90a", "h200"}, std::pair{"sm_80", "a100"}}) {
    std::map<std::string, std::string> sources;
    for (const auto& m : testing::primitive_modules())
      for (ir::DType dtype : m.dtypes) {
        const ir::Module module = parse(m, dtype);
        if (module.functions.empty()) continue;
        for (const auto& plan : plan_module(module, device).plans)
          for (const auto& c : plan.candidates) {
            if (!codegen::has_generated_launch(c)) continue;
            auto source = codegen::render_source(c);
            ASSERT_TRUE(source.has_value()) << source.status().to_string();
            auto [at, fresh] = sources.emplace(c.name(), *source);
            EXPECT_TRUE(fresh || at->second == *source) << "two sources named " << c.name();
          }
      }
    std::vector<codegen::CompileJob> jobs;
    for (const auto& [name, source] : sources) jobs.push_back({name, source});
    testing::expect_nvrtc_compiles(jobs, arch);
  }
}

// The library calls say what cuBLAS does with a transposed operand: a flag and a leading dimension,
// never a copy; a batched matmul is one strided-batched call.
TEST(PrimitiveFamilies, TransposedAndBatchedGemmsAreOneLibraryCall) {
  for (const auto& m : testing::primitive_modules()) {
    if (m.name != "matmul_transposed" && m.name != "bmm") continue;
    const ir::Module module = parse(m, ir::DType::kF32);
    const auto planned = plan_module(module, "h200");
    ASSERT_EQ(planned.plans.size(), 1u) << m.name;
    const auto& candidates = planned.plans.front().candidates;
    const auto fallback = std::find_if(candidates.begin(), candidates.end(), [](const plan::Candidate& c) { return c.fallback; });
    ASSERT_NE(fallback, candidates.end()) << m.name;
    const plan::Candidate& c = *fallback;
    ASSERT_EQ(c.launches.size(), 1u) << c.name();
    const auto& args = c.launches.front().library_args;
    EXPECT_EQ(args.at("op"), "gemm_batched");
    EXPECT_EQ(args.count("compute"), 0u) << "the fallback is the plain fp32 GEMM, no TF32";
    EXPECT_EQ(args.at("c"), "out0");
    EXPECT_EQ(args.at("ab_dtype"), "f32");
    if (m.name == "bmm") {
      EXPECT_EQ(args.at("batch"), "4");
      EXPECT_EQ(args.at("trans_a") + args.at("trans_b"), "00");
    } else {
      EXPECT_EQ(args.at("trans_a") + args.at("trans_b"), "11");
      EXPECT_EQ(args.at("a"), "in0");
      EXPECT_EQ(args.at("b"), "in1");
      EXPECT_EQ(args.at("m") + "x" + args.at("n") + "x" + args.at("k"), "64x80x96");
    }
  }
}

// fp32 matmuls bound by their FLOPs also get the 3xTF32 candidate (split_tf32.cuh): both operands
// split into the workspace, then three TF32 GEMMs that accumulate into the product, smallest terms
// first, reading the split parts where the split kernels wrote them; f16 matmuls and memory-bound
// ones (the small matmul, a matrix-vector product) do not. Per-token operands (T rows) live in the
// workspace's per-token part, fixed ones after it, each buffer aligned.
TEST(PrimitiveFamilies, Fp32MatmulsHaveASplitTf32Candidate) {
  const std::string t_rows =
      "module m {\n  param @w : $DT[512, 768]\n  func @f(%x: $DT[T, 768]) -> ($DT[T, 512]) {\n"
      "    %w = weight {name = \"w\"} : $DT[512, 768]\n    %0 = linear(%x, %w) : $DT[T, 512]\n    %1 = relu(%0) : $DT[T, 512]\n"
      "    return %1\n  }\n}\n";
  for (const auto& m : testing::primitive_modules()) {
    const bool compute_bound = m.name.find("compute_bound") != std::string::npos;
    if (m.name != "matmul" && m.name != "matvec" && !compute_bound) continue;
    for (ir::DType dtype : {ir::DType::kF32, ir::DType::kF16}) {
      const ir::Module module = parse(m, dtype);
      const Planned planned = plan_module(module, "h200");
      const auto& candidates = planned.plans.front().candidates;
      const auto split = std::find_if(candidates.begin(), candidates.end(), [](const plan::Candidate& c) { return c.name().ends_with("_3xtf32"); });
      EXPECT_EQ(split != candidates.end(), dtype == ir::DType::kF32 && compute_bound) << label(m, dtype);
      // Odd element counts split one float per thread; the others four (16-byte accesses).
      if (split == candidates.end()) continue;
      auto source = codegen::render_source(*split);
      ASSERT_TRUE(source.has_value()) << source.status().to_string();
      EXPECT_NE(source->find(m.name.ends_with("_odd") ? "split_tf32</*VEC=*/1>" : "split_tf32</*VEC=*/4>"), std::string::npos) << *source;
    }
  }
  // A plain linear (the fixed-epilogue matcher's) takes the general form when the split may pay.
  for (const auto& [rows, bias] : {std::pair{"T", false}, {"1024", false}, {"1024", true}}) {
    const std::string plain = "module m {\n  param @w : f32[512, 768]\n  param @b : f32[512]\n  func @f(%x: f32[" + std::string(rows) +
                              ", 768]) -> (f32[" + rows + ", 512]) {\n    %w = weight {name = \"w\"} : f32[512, 768]\n" +
                              "    %b = weight {name = \"b\"} : f32[512]\n" + "    %0 = linear(%x, %w" + (bias ? ", %b" : "") +
                              ") : f32[" + rows + ", 512]\n    return %0\n  }\n}\n";
    auto parsed = ir::parse_module(plain, "plain");
    ASSERT_TRUE(parsed.has_value()) << parsed.status().to_string();
    const Planned plain_planned = plan_module(*parsed, "h200");
    const auto& plain_candidates = plain_planned.plans.front().candidates;
    std::vector<std::string> names;
    for (const auto& c : plain_candidates) names.push_back(c.name());
    EXPECT_TRUE(std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.ends_with("_3xtf32"); })) << rows;
    EXPECT_TRUE(std::any_of(plain_candidates.begin(), plain_candidates.end(), [](const plan::Candidate& c) { return c.fallback; })) << rows;
  }
  // compile --no-tf32: the space keeps fp32 arithmetic only.
  {
    auto bound = ir::parse_module(testing::with_dtype(t_rows, ir::DType::kF32), "t_rows");
    ASSERT_TRUE(bound.has_value());
    const ir::Function& function = bound->functions.front();
    const auto partition = analysis::form_regions(*bound, function);
    const auto unique = analysis::unique_regions(*bound, function, partition, {64, 256});
    plan::PlannerOptions no_tf32;
    no_tf32.split_tf32 = false;
    const auto plans = plan::plan_function(*bound, function, partition, unique, *plan::named_device_profile("h200"), no_tf32);
    ASSERT_FALSE(plans.front().candidates.empty());
    for (const auto& c : plans.front().candidates) EXPECT_FALSE(c.name().ends_with("_3xtf32")) << c.name();
  }
  auto module = ir::parse_module(testing::with_dtype(t_rows, ir::DType::kF32), "t_rows");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const auto planned = plan_module(*module, "h200");
  const auto& candidates = planned.plans.front().candidates;
  const auto split = std::find_if(candidates.begin(), candidates.end(), [](const plan::Candidate& c) { return c.name().ends_with("_3xtf32"); });
  ASSERT_NE(split, candidates.end());
  EXPECT_FALSE(split->fallback);
  std::vector<std::string> kernels;
  for (const auto& launch : split->launches) kernels.push_back(launch.library ? launch.library_args.at("a") + "*" + launch.library_args.at("b") : launch.kernel.substr(launch.kernel.rfind('_')));
  // Per token: the product (512 floats), then A's high and low parts (768 floats each); fixed: B's parts.
  const std::string a_hi = "workspace:2048+0", a_lo = "workspace:5120+0", b_hi = "workspace:8192+0", b_lo = "workspace:8192+1572864";
  EXPECT_EQ(kernels, (std::vector<std::string>{"_a", "_b", a_lo + "*" + b_hi, a_hi + "*" + b_lo, a_hi + "*" + b_hi, "_program"}));
  for (size_t i = 2; i < 5; ++i) {
    const auto& args = split->launches[i].library_args;
    EXPECT_EQ(args.at("compute"), "tf32");
    EXPECT_EQ(args.count("beta"), i == 2 ? 0u : 1u);
    EXPECT_EQ(args.at("c"), "workspace:0");
    EXPECT_EQ(args.at("m"), "T");
  }
  EXPECT_EQ(split->workspace_bytes_per_token, 8192);
  EXPECT_EQ(split->workspace_bytes_fixed, 2 * 1572864);
  EXPECT_EQ(split->launches[0].grid_x.per_token, 768 / 4);
  EXPECT_EQ(split->launches[1].grid_x.fixed, 512 * 768 / 4);
}

// An op with no kernel at all is an error that names the op, its types and where the model made it.
TEST(PrimitiveFamilies, UnimplementedRegionNamesOpAndSourceLine) {
  const std::string text =
      "module m {\n  func @f(%x: f32[64, 100]) -> (f32[64, 100]) {\n"
      "    %0 = softmax(%x) {axis = 0} : f32[64, 100] loc \"model.py:17 in forward\"\n    return %0\n  }\n}\n";
  auto module = ir::parse_module(text, "softmax_axis0");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  const auto planned = plan_module(*module, "h200");
  ASSERT_EQ(planned.plans.size(), 1u);
  EXPECT_TRUE(planned.plans.front().candidates.empty());
  EXPECT_EQ(planned.plans.front().unplanned_reason,
            "no template family implements softmax over axis 0 of f32[64, 100] in a softmax region (model.py:17 in forward)");
}

}  // namespace
}  // namespace agentcompile
