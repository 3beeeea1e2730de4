// Planning decode_batch (ir/decode_batch.h): every unique region of Qwen3-1.7B's and Llama-3.2-1B's
// batched decode gets candidates on an H200 and an A100 profile; the per-row forms are taken by the
// kernels that implement them (rope_kv's ROWS variant, the reference attention's "rows" variant, the
// split-KV decode attention on each row's view, a row per blockIdx.z with the split's partials a block
// per row) and refused by those that do not (the prologue-fused forms); every candidate of the per-row
// regions compiles with NVRTC for sm_90a and sm_80. Admission against the interpreter runs on the GPU
// (tests/gpu/decode_batch_admission_test.cpp).
#include <gtest/gtest.h>

#include <set>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "ir/decode_batch.h"
#include "model_fixtures.h"
#include "nvrtc_expect.h"
#include "plan/planner.h"
#include "plan/sizes.h"
#include "tune/input_domains.h"
#include "tune/region_cases.h"

namespace agentcompile {
namespace {

struct Planned {
  std::vector<plan::RegionPlan> plans;
  std::vector<codegen::CompileJob> row_kernels;  // every candidate of a per-row region, rendered
  std::set<std::string> row_families;
};

Planned plan_decode_batch(const std::string& config, const std::string& device) {
  ir::Module module = fixtures::module_from_config("configs/" + config);
  Status added = ir::add_decode_batch(module);
  EXPECT_TRUE(added.is_ok()) << added.to_string();
  const ir::Function& f = *module.find_function(ir::kDecodeBatchFunction);
  auto partition = analysis::form_regions(module, f);
  auto unique = analysis::unique_regions(module, f, partition, plan::summary_bindings(f.name, 16));
  auto profile = plan::named_device_profile(device);
  EXPECT_TRUE(profile.has_value());
  Planned out;
  out.plans = plan::plan_function(module, f, partition, unique, *profile, plan::PlannerOptions{});
  for (const auto& p : out.plans) {
    const bool per_row = p.summary.category == analysis::Category::kAttentionDecode || p.summary.category == analysis::Category::kRopeKvAppend;
    if (!per_row) continue;
    for (const auto& c : p.candidates) {
      out.row_families.insert(c.family);
      if (!codegen::has_generated_launch(c)) continue;
      auto source = codegen::render_source(c);
      EXPECT_TRUE(source.has_value()) << config << " " << c.name() << ": " << source.status().to_string();
      if (source) out.row_kernels.push_back(codegen::CompileJob{c.name(), *source});
    }
  }
  return out;
}

TEST(DecodeBatchFamilies, EveryRegionIsPlannedAndThePerRowFormsByTheirKernels) {
  for (const char* config : {"qwen3-1.7b.json", "llama-3.2-1b.json"})
    for (const char* device : {"h200", "a100"}) {
      const Planned planned = plan_decode_batch(config, device);
      ASSERT_FALSE(planned.plans.empty());
      for (const auto& p : planned.plans)
        EXPECT_FALSE(p.candidates.empty()) << config << " " << device << " r" << p.unique_id << " ("
                                           << analysis::category_name(p.summary.category) << "): " << p.unplanned_reason;
      EXPECT_EQ(planned.row_families, (std::set<std::string>{"rope_kv", "attention_reference", "attention_decode"})) << config << " " << device;
      for (const auto& job : planned.row_kernels) {
        if (job.kernel.rfind("attention_decode_", 0) == 0) {
          EXPECT_NE(job.kernel.find("_rows"), std::string::npos) << job.kernel;
          EXPECT_NE(job.source.find("ac::attention_decode_row<"), std::string::npos) << job.kernel;
          EXPECT_NE(job.source.find("const int* base = "), std::string::npos) << job.kernel;
          continue;
        }
        const bool rope = job.kernel.rfind("rope_kv_", 0) == 0;
        EXPECT_TRUE(rope ? job.kernel.find("_rows_") != std::string::npos : job.kernel.rfind("attention_reference_rows_", 0) == 0)
            << job.kernel;
        EXPECT_NE(job.source.find("ROWS=*/true"), std::string::npos) << job.kernel;
        EXPECT_NE(job.source.find("p.base = "), std::string::npos) << job.kernel;
      }
    }
}

// The split-KV decode attention on decode_batch's attention region: it ranks above the reference
// kernel, every launch has a block row per query row (grid z = T), and the two-launch split form asks
// for its partials per row.
TEST(DecodeBatchFamilies, TheSplitKvAttentionRunsARowPerZ) {
  for (const char* config : {"qwen3-1.7b.json", "llama-3.2-1b.json"}) {
    const Planned planned = plan_decode_batch(config, "h200");
    int regions = 0;
    for (const auto& p : planned.plans) {
      if (p.summary.category != analysis::Category::kAttentionDecode) continue;
      ++regions;
      ASSERT_FALSE(p.candidates.empty());
      EXPECT_EQ(p.candidates.front().family, "attention_decode") << config << " r" << p.unique_id;
      int split = 0;
      for (const auto& c : p.candidates) {
        if (c.family != "attention_decode") continue;
        EXPECT_TRUE(c.match.roles.count("base")) << c.name();
        for (const plan::Launch& launch : c.launches) EXPECT_EQ(launch.grid_z.at(5), 5) << c.name() << " " << launch.kernel;
        EXPECT_EQ(c.workspace_bytes_fixed, 0) << c.name();
        if (c.launches.size() != 2) continue;
        ++split;
        EXPECT_EQ(c.workspace_bytes_per_token, c.match.facts.at("NH") * c.params.at("splits") * (c.match.facts.at("D") + 2) * 4)
            << c.name();
      }
      EXPECT_GT(split, 0) << config << " r" << p.unique_id << ": a two-launch split candidate";
    }
    EXPECT_EQ(regions, 1) << config;
  }
}

TEST(DecodeBatchFamilies, PerRowKernelsCompileForSm90aAndSm80) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const auto& [device, arch] : {std::pair<std::string, std::string>{"h200", "sm_90a"}, {"a100", "sm_80"}}) {
    std::vector<codegen::CompileJob> jobs;
    for (const char* config : {"qwen3-1.7b.json", "llama-3.2-1b.json"}) {
      Planned planned = plan_decode_batch(config, device);
      for (auto& job : planned.row_kernels) jobs.push_back(std::move(job));
    }
    ASSERT_FALSE(jobs.empty());
    testing::expect_nvrtc_compiles(jobs, arch);
  }
}

// Admission's reference side on the CPU: every region of a tiny Qwen3's decode_batch extracted, its cases
// drawn at the compile's validation size (5 sequences in slots of 101 rows) and run on the interpreter;
// the per-row inputs come out as input_domains.h says (positions inside a slot, bases distinct slots).
TEST(DecodeBatchFamilies, RegionCasesDrawRowsInsideTheirSlotsAndRunOnTheInterpreter) {
  ir::Module module = fixtures::tiny_model("tiny-qwen3.json");
  ASSERT_TRUE(ir::add_decode_batch(module).is_ok());
  const ir::Function& f = *module.find_function(ir::kDecodeBatchFunction);
  auto partition = analysis::form_regions(module, f);
  auto unique = analysis::unique_regions(module, f, partition, plan::summary_bindings(f.name, 16));
  const tune::RegionBindings b{5, 5 * 101, 0};
  int per_row_inputs = 0;
  for (const auto& u : unique) {
    const auto& region = partition.regions[static_cast<size_t>(u.sites.front())];
    auto region_module = analysis::extract_region(module, f, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, b, 1, {tune::Distribution::kNormal});
    ASSERT_TRUE(cases.has_value()) << "r" << u.id << ": " << cases.status().to_string();
    const std::vector<tune::InputDomain> domains = tune::input_domains(*region_module->find_function("region"));
    for (size_t i = 0; i < domains.size(); ++i) {
      const auto& values = (*cases)[0].inputs[i].values;
      if (domains[i].domain == tune::Domain::kRowPosition) {
        ++per_row_inputs;
        for (float v : values) EXPECT_TRUE(v >= 0 && v < 101) << "position " << v;
      } else if (domains[i].domain == tune::Domain::kRowBase) {
        ++per_row_inputs;
        std::set<float> slots(values.begin(), values.end());
        EXPECT_EQ(slots.size(), 5u) << "one slot per row";
        for (float v : values) EXPECT_TRUE(static_cast<int>(v) % 101 == 0 && v < 505) << "base " << v;
      }
    }
  }
  EXPECT_GE(per_row_inputs, 4) << "rope_kv's and attention's positions and bases";
}

}  // namespace
}  // namespace agentcompile
