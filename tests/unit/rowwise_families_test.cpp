// Row-wise families without a GPU: every rmsnorm and gather region of the Qwen3-1.7B and
// Llama-3.2-1B graphs (f16 and bf16, decode and prefill) and every region of the synthetic
// modules in rowwise_modules.h (fused rmsnorm, softmax, reductions, broadcasting pointwise chains)
// is matched by its family with a bounded, ranked space that holds a fallback, and every
// candidate renders and compiles with NVRTC for sm_90a and sm_80.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "ir/text.h"
#include "plan/families/row_program.h"
#include "plan/planner.h"
#include "rowwise_modules.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

const std::set<std::string> kRowwise = {"rmsnorm", "embedding", "elementwise", "softmax", "reduction"};

std::vector<plan::RegionPlan> plan_all(const ir::Module& module, const std::string& function_name, const std::string& device) {
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {1, 2048});
  auto profile = plan::named_device_profile(device);
  return plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
}

ir::Module model(const std::string& config_name, ir::DType dtype) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + config_name);
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  config->dtype = dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return std::move(module).value();
}

struct ModelCase {
  std::string config;
  ir::DType dtype;
  std::string function;
  std::string label() const { return config + " " + std::string(ir::dtype_name(dtype)) + " " + function; }
};

std::vector<ModelCase> model_cases() {
  std::vector<ModelCase> cases;
  for (const char* config : {"qwen3-1.7b.json", "llama-3.2-1b.json"})
    for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16})
      for (const char* function : {"decode", "prefill"}) cases.push_back({config, dtype, function});
  return cases;
}

// The space `family` offers a region: matched, at least 3 candidates, ranked, one fallback.
void expect_space(const plan::RegionPlan& plan, const std::string& family, const std::string& where) {
  SCOPED_TRACE(where + " r" + std::to_string(plan.unique_id));
  ASSERT_NE(std::find(plan.families_matched.begin(), plan.families_matched.end(), family), plan.families_matched.end())
      << "not matched by " << family << ": " << plan.unplanned_reason;
  int mine = 0, fallbacks = 0;
  std::set<std::string> names;
  for (const auto& c : plan.candidates) {
    if (c.family != family) continue;
    ++mine;
    fallbacks += c.fallback;
    EXPECT_TRUE(names.insert(c.name()).second) << "duplicate kernel name " << c.name();
    EXPECT_TRUE(c.launches.size() == 1 || (c.launches.size() == 2 && c.params.count("split"))) << c.name();
    for (const auto& launch : c.launches) {
      EXPECT_LE(launch.block_x, 1024);
      EXPECT_EQ(launch.block_x % 32, 0) << launch.kernel;
    }
    EXPECT_FALSE(c.notes.empty()) << c.name() << " has no reason for its rank";
  }
  EXPECT_GE(mine, 3);
  EXPECT_EQ(fallbacks, 1);
  for (size_t i = 1; i < plan.candidates.size(); ++i) EXPECT_GE(plan.candidates[i - 1].score, plan.candidates[i].score);
}

// Sources of every row-wise candidate, by kernel name.
void add_jobs(const std::vector<plan::RegionPlan>& plans, std::map<std::string, std::string>& jobs) {
  for (const auto& plan : plans)
    for (const auto& c : plan.candidates) {
      if (!kRowwise.count(c.family)) continue;
      auto source = codegen::render_source(c);
      ASSERT_TRUE(source.has_value()) << source.status().to_string();
      auto [it, fresh] = jobs.emplace(c.name(), *source);
      EXPECT_TRUE(fresh || it->second == *source) << "two sources named " << c.name();
    }
}

void expect_compiles(const std::map<std::string, std::string>& sources, const std::string& arch) {
  std::vector<codegen::CompileJob> jobs;
  for (const auto& [name, source] : sources) jobs.push_back({name, source});
  ASSERT_FALSE(jobs.empty());
  testing::expect_nvrtc_compiles(jobs, arch);
}

// The partition of a module's first function into regions: how many there are.
size_t region_count(const ir::Module& module) { return analysis::form_regions(module, module.functions.front()).regions.size(); }

// The row program of a module's first function taken as its first region, at T tokens.
std::optional<plan::RowProgram> single_region_program(const ir::Module& module, int64_t T) {
  const ir::Function& f = module.functions.front();
  auto partition = analysis::form_regions(module, f);
  auto unique = analysis::unique_regions(module, f, partition, {T, 1});
  plan::RegionContext ctx{&module, &f, &partition.regions.front(), &unique.front().summary};
  return plan::analyze_row_program(ctx);
}

TEST(RowwiseFamilies, EveryNormAndGatherRegionOfBothModelsIsMatched) {
  for (const ModelCase& mc : model_cases()) {
    const ir::Module module = model(mc.config, mc.dtype);
    int norms = 0, gathers = 0;
    for (const auto& plan : plan_all(module, mc.function, "h200")) {
      if (plan.summary.category == analysis::Category::kRmsNorm) {
        ++norms;
        expect_space(plan, "rmsnorm", mc.label());
        EXPECT_EQ(plan.candidates.front().match.variant, "plain");
      } else if (plan.summary.category == analysis::Category::kGather) {
        ++gathers;
        expect_space(plan, "embedding", mc.label());
      }
    }
    // Decode norms are GEMV prologues (analysis/regions.h); prefill keeps its norm over T rows (the
    // last token's row, which only lm_head reads, is a prologue too).
    EXPECT_EQ(norms, mc.function == "decode" ? 0 : 1) << mc.label();
    EXPECT_EQ(gathers, 1) << mc.label();
  }
}

TEST(RowwiseFamilies, KernelNamesSpellTheirParameters) {
  const ir::Module module = model("qwen3-1.7b.json", ir::DType::kBF16);
  std::set<std::string> names;
  for (const char* function : {"prefill", "decode"})
    for (const auto& plan : plan_all(module, function, "h200"))
      for (const auto& c : plan.candidates) names.insert(c.name());
  EXPECT_TRUE(names.count("rmsnorm_bf16_h2048_e6_mT_t256_v8_r1"));
  EXPECT_TRUE(names.count("rmsnorm_bf16_h2048_e6_mT_t128_v1_r1"));  // the fallback
  EXPECT_TRUE(names.count("embedding_bf16_vocab151936_h2048_m1_t256_v8_r1"));
}

TEST(RowwiseFamilies, ModelCandidatesCompileWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const auto& [arch, device] : {std::pair{"sm_90a", "h200"}, std::pair{"sm_80", "a100"}}) {
    std::map<std::string, std::string> jobs;
    for (const ModelCase& mc : model_cases()) add_jobs(plan_all(model(mc.config, mc.dtype), mc.function, device), jobs);
    expect_compiles(jobs, arch);
  }
}

TEST(RowwiseFamilies, SyntheticRegionsAreMatched) {
  for (const auto& m : testing::rowwise_modules()) {
    ASSERT_EQ(m.module.functions.size(), 1u) << m.name << " did not build";
    const auto plans = plan_all(m.module, "f", "h200");
    ASSERT_EQ(plans.size(), 1u) << m.name << ": expected one region";
    expect_space(plans.front(), m.family, m.name);
    for (const auto& other : plans.front().families_matched) {
      if (kRowwise.count(other)) {
        EXPECT_EQ(other, m.family) << m.name << " matched by two row-wise families";
      }
    }
  }
}

TEST(RowwiseFamilies, SyntheticCandidatesCompileWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const auto& [arch, device] : {std::pair{"sm_90a", "h200"}, std::pair{"sm_80", "a100"}}) {
    std::map<std::string, std::string> jobs;
    for (const auto& m : testing::rowwise_modules()) add_jobs(plan_all(m.module, "f", device), jobs);
    expect_compiles(jobs, arch);
  }
}

// The row program of a partially broadcast operand: [4, 1] against [T, 4, 64] strides the head
// axis and broadcasts tokens and columns.
TEST(RowProgram, PartialBroadcastStrides) {
  for (const auto& m : testing::rowwise_modules()) {
    if (m.name != "head_broadcast") continue;
    const ir::Function& f = m.module.functions.front();
    auto partition = analysis::form_regions(m.module, f);
    ASSERT_EQ(partition.regions.size(), 1u);
    auto unique = analysis::unique_regions(m.module, f, partition, {1, 1});
    plan::RegionContext ctx{&m.module, &f, &partition.regions.front(), &unique.front().summary};
    auto program = plan::analyze_row_program(ctx);
    ASSERT_TRUE(program.has_value());
    EXPECT_EQ(program->cols, 64);
    EXPECT_EQ(program->lead, (std::vector<int64_t>{0, 4}));
    EXPECT_EQ(program->rows_per_token(), 4);
    ASSERT_EQ(program->loads.size(), 3u);  // x, y, w (read twice, loaded once)
    const auto& w = program->loads[2];
    EXPECT_EQ(w.slot, "w0");
    EXPECT_EQ(w.row_strides, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(w.col_stride, 0);
    EXPECT_EQ(program->loads[0].row_strides, (std::vector<int64_t>{256, 64}));
    EXPECT_EQ(program->stores.size(), 1u);
    // Round trip through a Match.
    plan::Match match;
    plan::encode_row_program(*program, match);
    const plan::RowProgram back = plan::decode_row_program(match);
    EXPECT_EQ(back.loads.size(), program->loads.size());
    EXPECT_EQ(back.loads[2].row_strides, w.row_strides);
    EXPECT_EQ(back.steps.size(), program->steps.size());
    EXPECT_EQ(back.stores.front().slot, "out0");
  }
}

// A captured dropout's random_uniform is read where it is read: a load computed from the seed and the
// element's offset into the random tensor (kernels/random.cuh), one per source (a full [T, 8, 64] mask and a
// [8, 64] one broadcast over T), whose seeds survive the match's serialization exactly (2^40 + 7 is no
// float); every candidate includes the generator, names its seed and compiles with NVRTC.
TEST(RowProgram, RandomUniformIsALoadOfItsSeedAndOffset) {
  auto module = ir::parse_module(R"(module m {
  func @forward(%x: f16[T, 8, 64]) -> (f16[T, 8, 64]) {
    %u = random_uniform {seed = 1099511627783, shape = [T, 8, 64]} : f32[T, 8, 64]
    %v = random_uniform {seed = 3, shape = [8, 64]} : f32[8, 64]
    %p = constant {dtype = "f32", shape = [], value = 0.25} : f32[]
    %keep = ge(%u, %p) : bool[T, 8, 64]
    %vb = broadcast(%v) {shape = [T, 8, 64]} : f32[T, 8, 64]
    %also = ge(%vb, %p) : bool[T, 8, 64]
    %both = logical_and(%keep, %also) : bool[T, 8, 64]
    %zero = constant {dtype = "f16", shape = [], value = 0.0} : f16[]
    %y = where(%both, %x, %zero) : f16[T, 8, 64]
    return %y
  }
}
)");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  ASSERT_EQ(region_count(*module), 1u);
  auto program = single_region_program(*module, 3);
  ASSERT_TRUE(program.has_value());
  std::vector<const plan::RowProgram::Load*> random;
  for (const auto& load : program->loads)
    if (load.kind == plan::RowProgram::LoadKind::kRandom) random.push_back(&load);
  ASSERT_EQ(random.size(), 2u);
  EXPECT_EQ(random[0]->value, 1099511627783.0);
  EXPECT_EQ(random[0]->row_strides, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(random[1]->value, 3.0);
  EXPECT_EQ(random[1]->row_strides, (std::vector<int64_t>{0, 64}));  // the same mask for every token
  plan::Match match;
  plan::encode_row_program(*program, match);
  const plan::RowProgram back = plan::decode_row_program(match);
  ASSERT_EQ(back.loads.size(), program->loads.size());
  for (size_t i = 0; i < back.loads.size(); ++i) {
    EXPECT_EQ(back.loads[i].kind, program->loads[i].kind) << i;
    EXPECT_EQ(back.loads[i].value, program->loads[i].value) << i;
    EXPECT_EQ(back.loads[i].row_strides, program->loads[i].row_strides) << i;
  }
  std::map<std::string, std::string> jobs;
  const auto plans = plan_all(*module, "forward", "h200");
  ASSERT_EQ(plans.size(), 1u);
  for (const auto& c : plans.front().candidates) {
    auto source = codegen::render_source(c);
    ASSERT_TRUE(source.has_value()) << source.status().to_string();
    EXPECT_NE(source->find("#include \"random.cuh\""), std::string::npos) << c.name();
    EXPECT_NE(source->find("ac::random_uniform(1099511627783ULL, "), std::string::npos) << c.name();
    EXPECT_NE(source->find("ac::random_uniform(3ULL, "), std::string::npos) << c.name();
    jobs.emplace(c.name(), *source);
  }
  if (codegen::cuda_include_dir()) expect_compiles(jobs, "sm_90a");
}

// A captured module's batch of scalars ([T], KernelBench level 2 problem 55's final scale): T rows of
// one column, every operand read at a row stride of 1 or broadcast (0); a row op over [T] is not
// taken this way (it would reduce over the batch).
TEST(RowProgram, VectorOfTIsRowsOfOneColumn) {
  auto module = ir::parse_module(R"(module m {
  func @forward(%x: f32[T], %s: f32[]) -> (f32[T]) {
    %y = mul(%x, %s) : f32[T]
    %z = exp(%y) : f32[T]
    return %z
  }
}
)");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  ASSERT_EQ(region_count(*module), 1u);
  auto program = single_region_program(*module, 37);
  ASSERT_TRUE(program.has_value());
  EXPECT_EQ(program->cols, 1);
  EXPECT_EQ(program->lead, (std::vector<int64_t>{0}));
  EXPECT_EQ(program->rows_per_token(), 1);
  ASSERT_EQ(program->loads.size(), 2u);
  EXPECT_EQ(program->loads[0].row_strides, (std::vector<int64_t>{1}));
  EXPECT_EQ(program->loads[0].col_stride, 0);
  EXPECT_EQ(program->loads[1].row_strides, (std::vector<int64_t>{0}));
  auto plans = plan_all(*module, "forward", "h200");
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_FALSE(plans.front().candidates.empty());
  for (const auto& c : plans.front().candidates) EXPECT_TRUE(codegen::render_source(c).has_value()) << c.name();

  auto reduce = ir::parse_module(R"(module m {
  func @forward(%x: f32[T]) -> (f32[T]) {
    %y = softmax(%x) {axis = 0} : f32[T]
    return %y
  }
}
)");
  ASSERT_TRUE(reduce.has_value()) << reduce.status().to_string();
  const ir::Function& g = reduce->functions.front();
  auto partition_g = analysis::form_regions(*reduce, g);
  auto unique_g = analysis::unique_regions(*reduce, g, partition_g, {37, 1});
  plan::RegionContext ctx_g{&*reduce, &g, &partition_g.regions.front(), &unique_g.front().summary};
  EXPECT_FALSE(plan::analyze_row_program(ctx_g).has_value());
}

}  // namespace
}  // namespace agentcompile
