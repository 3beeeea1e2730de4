// Every region of every supported model gets a runnable candidate, without a GPU: the tiny test
// checkpoints (head_dim 16 and 32), the small Qwen3 fixture and the Qwen3-1.7B / Llama-3.2-1B
// presets, in f32, f16 and bf16, prefill and decode, plan at least one candidate for every unique
// region; every attention region carries the attention_reference fallback, ranked last. The
// reference kernel compiles with NVRTC for sm_90a at every head dimension it claims (multiples of 8
// and not) in every dtype, the f32 rope_kv candidates compile, and the family says why it rejects
// what it cannot do.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/model_builder.h"
#include "ir/text.h"
#include "plan/families/attention_reference.h"
#include "plan/planner.h"

namespace agentcompile {
namespace {

namespace fs = std::filesystem;

// Config files, relative to the source tree.
constexpr const char* kModels[] = {
    "tests/fixtures/configs/tiny-llama.json",  // bf16 checkpoint, head_dim 16, llama3 rope scaling
    "tests/fixtures/configs/tiny-qwen2.json",  // f16 checkpoint, head_dim 16, qkv bias
    "tests/fixtures/configs/tiny-qwen3.json",  // f32 checkpoint, head_dim 32, one kv head
    "tests/fixtures/configs/small-qwen3.json",
    "configs/qwen3-1.7b.json",
    "configs/llama-3.2-1b.json",
};
constexpr ir::DType kDtypes[] = {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16};

std::string label(const std::string& what, ir::DType dtype, const std::string& function) {
  return what + " " + std::string(ir::dtype_name(dtype)) + " " + function;
}

ir::Module build_model(const std::string& config_path, ir::DType dtype) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/" + config_path);
  EXPECT_TRUE(config.has_value()) << config_path << ": " << config.status().to_string();
  config->dtype = dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << config_path << ": " << module.status().to_string();
  return std::move(module).value();
}

std::vector<plan::RegionPlan> plan_function(const ir::Module& module, const std::string& function_name, const std::string& device,
                                            analysis::RegionPartition* partition_out = nullptr, int max_candidates = plan::PlannerOptions{}.max_candidates) {
  const ir::Function* function = module.find_function(function_name);
  EXPECT_NE(function, nullptr) << function_name;
  if (!function) return {};
  auto partition = analysis::form_regions(module, *function);
  auto unique = analysis::unique_regions(module, *function, partition, {1, 2048});
  auto profile = plan::named_device_profile(device);
  EXPECT_TRUE(profile.has_value());
  plan::PlannerOptions options;
  options.max_candidates = max_candidates;
  auto plans = plan::plan_function(module, *function, partition, unique, *profile, options);
  if (partition_out) *partition_out = std::move(partition);
  return plans;
}

// A module of one attention layer: the k/v appends, then attention over the cache, in `prefill`
// (T queries) and `decode` (one query).
ir::Module attention_module(ir::DType dtype, int64_t NH, int64_t KV, int64_t D, double scale, ir::DType kv_dtype) {
  const std::string dt(ir::dtype_name(dtype)), kt(ir::dtype_name(kv_dtype));
  const std::string nh = std::to_string(NH), kv = std::to_string(KV), d = std::to_string(D);
  char scale_text[64];
  std::snprintf(scale_text, sizeof(scale_text), "%.17g", scale);
  std::string s = std::string(scale_text);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  std::string text = "module attn {\n  state @kv.0.k : " + kt + "[L, " + kv + ", " + d + "]\n  state @kv.0.v : " + kt + "[L, " + kv +
                     ", " + d + "]\n";
  for (const char* rows : {"T", "1"}) {
    const std::string r = rows;
    text += std::string("  func @") + (r == "T" ? "prefill" : "decode") + "(%q: " + dt + "[" + r + ", " + nh + ", " + d +
            "], %k: " + kt + "[" + r + ", " + kv + ", " + d + "], %v: " + kt + "[" + r + ", " + kv + ", " + d +
            "], %pos: i32[]) -> (" + dt + "[" + r + ", " + nh + ", " + d + "]) {\n" +
            "    %0 = kv_append(%k, %pos) {state = \"kv.0.k\"} : " + kt + "[L, " + kv + ", " + d + "]\n" +
            "    %1 = kv_append(%v, %pos) {state = \"kv.0.v\"} : " + kt + "[L, " + kv + ", " + d + "]\n" +
            "    %2 = attention(%q, %0, %1, %pos) {scale = " + s + "} : " + dt + "[" + r + ", " + nh + ", " + d + "]\n" +
            "    return %2\n  }\n";
  }
  text += "}\n";
  auto module = ir::parse_module(text, "attention_module");
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << text;
  return module ? std::move(module).value() : ir::Module{};
}

ir::Module attention_module(ir::DType dtype, int64_t NH, int64_t KV, int64_t D) {
  return attention_module(dtype, NH, KV, D, 1.0 / std::sqrt(static_cast<double>(D)), dtype);
}

const plan::RegionPlan* attention_plan(const std::vector<plan::RegionPlan>& plans) {
  for (const auto& plan : plans)
    if (plan.summary.category == analysis::Category::kAttentionPrefill || plan.summary.category == analysis::Category::kAttentionDecode)
      return &plan;
  return nullptr;
}

std::vector<const plan::Candidate*> of_family(const plan::RegionPlan& plan, const std::string& family) {
  std::vector<const plan::Candidate*> out;
  for (const auto& c : plan.candidates)
    if (c.family == family) out.push_back(&c);
  return out;
}

codegen::NvrtcOptions nvrtc_options(const std::string& arch) {
  codegen::NvrtcOptions options;
  options.arch = arch;
  options.cache_dir = fs::path(AC_BINARY_DIR) / "test-nvrtc-cache";
  return options;
}

// The reference candidate of an attention region: one, the fallback, generated, ranked last, on the
// region's interface, one block per (query row, head).
// `prologue`: the region is a model's decode attention, which opens with its token's RoPE / KV append.
void expect_reference_candidate(const plan::RegionPlan& plan, const std::string& where, bool prologue) {
  SCOPED_TRACE(where);
  auto refs = of_family(plan, "attention_reference");
  ASSERT_EQ(refs.size(), 1u) << "families matched: " << plan.families_matched.size();
  const plan::Candidate& c = *refs.front();
  EXPECT_TRUE(c.fallback);
  EXPECT_EQ(c.source_class, "generated");
  EXPECT_EQ(c.template_file, "attention_reference.cuh");
  EXPECT_EQ(&c, &plan.candidates.back()) << "the reference must rank last, after " << plan.candidates.back().name();
  for (const auto& other : plan.candidates) {
    if (&other == &c) continue;
    EXPECT_GT(other.score, c.score) << other.name();
  }
  const bool decode = plan.summary.category == analysis::Category::kAttentionDecode;
  EXPECT_EQ(c.match.variant, decode ? "decode" : "prefill");
  EXPECT_EQ(c.match.roles.at("o"), "out0");
  if (prologue) {
    // Decode attention opens with its token's RoPE and KV append (and QK-norm where the model has
    // it): the reference does them in a first launch, the rope_kv kernel writing the rotated query
    // to the workspace and the new rows to the caches.
    ASSERT_EQ(c.match.facts.count("prologue"), 1u);
    EXPECT_EQ(c.match.roles.at("k").rfind("state", 0), 0u);
    EXPECT_EQ(c.match.roles.at("v").rfind("state", 0), 0u);
    for (const char* role : {"q", "k_new", "v_new", "pos"}) EXPECT_EQ(c.match.roles.at(role).rfind("in", 0), 0u) << role;
    ASSERT_EQ(c.launches.size(), 2u);
    EXPECT_EQ(c.launches.front().kernel, c.launches.back().kernel + "_prologue");
    EXPECT_EQ(c.workspace_bytes_per_token, 0);
    EXPECT_EQ(c.workspace_bytes_fixed, c.match.facts.at("NH") * c.match.facts.at("D") * static_cast<int64_t>(ir::dtype_size(c.match.dtype)));
  } else {
    EXPECT_EQ(c.match.roles.at("q"), "in0");
    EXPECT_EQ(c.match.roles.at("k"), "in1");
    EXPECT_EQ(c.match.roles.at("v"), "in2");
    EXPECT_EQ(c.match.roles.at("pos"), "in3");
    ASSERT_EQ(c.launches.size(), 1u);
    EXPECT_EQ(c.workspace_bytes_per_token + c.workspace_bytes_fixed, 0);
  }
  const plan::Launch& launch = c.launches.back();
  EXPECT_FALSE(launch.library);
  EXPECT_EQ(launch.grid_y.at(37), c.match.facts.at("NH"));
  EXPECT_EQ(launch.grid_x.at(37), decode ? 1 : 37);  // one block per query row
  EXPECT_EQ(launch.block_x, c.params.at("threads"));
  EXPECT_GE(c.params.at("tile"), 8);
  EXPECT_FALSE(c.notes.empty());
}

TEST(FallbackCoverage, EveryRegionOfEveryModelAndDtypeHasACandidate) {
  for (const char* model : kModels)
    for (ir::DType dtype : kDtypes) {
      const ir::Module module = build_model(model, dtype);
      for (const char* function : {"prefill", "decode"})
        for (const char* device : {"h200", "a100"}) {
          const std::string where = label(model, dtype, function) + " on " + device;
          const auto plans = plan_function(module, function, device);
          ASSERT_FALSE(plans.empty()) << where;
          int attention = 0;
          for (const auto& plan : plans) {
            EXPECT_FALSE(plan.candidates.empty())
                << where << " r" << plan.unique_id << " (" << analysis::category_name(plan.summary.category)
                << "): no candidates: " << plan.unplanned_reason;
            EXPECT_TRUE(plan.unplanned_reason.empty()) << where << " r" << plan.unique_id;
            bool has_fallback = false;
            for (const auto& c : plan.candidates) has_fallback |= c.fallback;
            EXPECT_TRUE(has_fallback) << where << " r" << plan.unique_id << ": no fallback candidate";
            if (plan.summary.category == analysis::Category::kAttentionPrefill ||
                plan.summary.category == analysis::Category::kAttentionDecode) {
              ++attention;
              expect_reference_candidate(plan, where + " r" + std::to_string(plan.unique_id),
                                         plan.summary.category == analysis::Category::kAttentionDecode);
            }
          }
          EXPECT_EQ(attention, 1) << where << ": one unique attention region";
        }
    }
}

// Where the fast families match, they keep the top of the list: the reference only takes the last slot.
TEST(FallbackCoverage, FastAttentionFamiliesStillRankFirst) {
  for (const char* model : {"configs/qwen3-1.7b.json", "configs/llama-3.2-1b.json"})
    for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16}) {
      const ir::Module module = build_model(model, dtype);
      for (const char* function : {"prefill", "decode"}) {
        const auto plans = plan_function(module, function, "h200");
        const plan::RegionPlan* plan = attention_plan(plans);
        ASSERT_NE(plan, nullptr);
        const std::string fast = std::string(function) == "prefill" ? "attention_prefill" : "attention_decode";
        EXPECT_EQ(plan->candidates.front().family, fast) << label(model, dtype, function);
        EXPECT_EQ(plan->candidates.back().family, "attention_reference") << label(model, dtype, function);
      }
    }
}

// The CLI without a GPU, on the tiny checkpoints as they are stored (bf16, f16 and f32): no region
// is left without candidates, and every generated candidate compiles.
TEST(FallbackCoverage, TinyCheckpointsCompileWithoutGpu) {
#ifndef AC_CLI
  GTEST_SKIP() << "built without the CLI";
#else
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* model : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
    const fs::path work = fs::path(AC_BINARY_DIR) / "fallback-test" / model;
    fs::remove_all(work);
    const std::string command = std::string(AC_CLI) + " compile " + AC_SOURCE_DIR + "/tests/fixtures/models/" + model + " -o " +
                                (work / "artifact").string() + " --no-gpu --cache-dir " +
                                (fs::path(AC_BINARY_DIR) / "fallback-test" / "cache").string() + " 2>&1";
    std::string output;
    FILE* pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
    ASSERT_EQ(pclose(pipe), 0) << output;
    EXPECT_EQ(output.find("no candidates"), std::string::npos) << output;
    std::ifstream in(work / "artifact" / "metadata.json");
    const nlohmann::json meta = nlohmann::json::parse(in);
    int references = 0;
    for (const auto& region : meta["regions"]) {
      EXPECT_FALSE(region["candidates"].empty()) << model << " " << region["id"];
      for (const auto& candidate : region["candidates"]) {
        references += candidate["name"].get<std::string>().rfind("attention_reference_", 0) == 0;
        bool has_kernel = false;
        for (const auto& launch : candidate["launches"]) has_kernel |= !launch["library"].get<bool>();
        if (has_kernel) {
          EXPECT_TRUE(candidate["compile"]["ok"].get<bool>()) << candidate["name"] << "\n" << candidate["compile"]["log"];
        }
      }
    }
    EXPECT_EQ(references, 2) << model << ": the prefill and the decode attention region";
  }
#endif
}

// Head dimensions the fast families do not take (not multiples of 8, or odd) and those they do, in
// every dtype, prefill and decode, with and without GQA: matched, rendered, compiled for sm_90a.
TEST(AttentionReference, CompilesWithNvrtcForEveryHeadDimAndDtype) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  struct Heads {
    int64_t NH, KV;
  };
  std::vector<codegen::CompileJob> jobs;
  for (int64_t D : {13, 16, 20, 32, 48, 64, 80, 96, 100, 128, 256, 512})
    for (ir::DType dtype : kDtypes) {
      const Heads heads = D % 2 ? Heads{3, 3} : D == 16 ? Heads{4, 2} : D == 32 ? Heads{4, 1} : Heads{8, 2};
      const ir::Module module = attention_module(dtype, heads.NH, heads.KV, D);
      for (const char* function : {"prefill", "decode"}) {
        const std::string where = label("D=" + std::to_string(D), dtype, function);
        const auto plans = plan_function(module, function, "h200");
        const plan::RegionPlan* plan = attention_plan(plans);
        ASSERT_NE(plan, nullptr) << where;
        expect_reference_candidate(*plan, where, false);
        const plan::Candidate& c = *of_family(*plan, "attention_reference").front();
        EXPECT_EQ(c.match.facts.at("D"), D);
        EXPECT_EQ(c.match.dtype, dtype);
        auto source = codegen::render_source(c);
        ASSERT_TRUE(source.has_value()) << source.status().to_string();
        EXPECT_NE(source->find("ac::attention_reference<"), std::string::npos);
        EXPECT_NE(source->find(std::string(function) == "decode" ? "p.tokens = 1;" : "p.tokens = a.T;"), std::string::npos) << *source;
        jobs.push_back({c.name(), *source});
      }
    }
  auto results = codegen::compile_all(jobs, nvrtc_options("sm_90a"));
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  ASSERT_EQ(results->size(), jobs.size());
  for (const auto& result : *results) EXPECT_TRUE(result.ok) << result.kernel << ":\n" << result.log;
}

// The cluster form of decode attention gathers every block's partial in block 0's static shared
// memory, beside the per-warp partials: for wide GQA groups and large heads the space must drop the
// clusters that would not fit in 48 KB (a Qwen3-8B-like 32 x 8 heads of 128 has some), keep the ones
// that do, and those must compile. (The planner's throw when one schedule was the best estimate at two
// context lengths is covered by AttentionReference.CompilesWithNvrtcForEveryHeadDimAndDtype, whose
// head dims hit it.)
TEST(AttentionDecodeFamily, ClusterPartialsFitStaticSharedMemory) {
  auto include = codegen::cuda_include_dir();
  std::vector<codegen::CompileJob> jobs;
  struct Shape {
    int64_t NH, KV, D;
  };
  for (const Shape shape : {Shape{32, 8, 128}, Shape{64, 8, 128}, Shape{32, 8, 64}, Shape{16, 16, 128}}) {
    const std::string where = "NH=" + std::to_string(shape.NH) + " KV=" + std::to_string(shape.KV) + " D=" + std::to_string(shape.D);
    const ir::Module module = attention_module(ir::DType::kBF16, shape.NH, shape.KV, shape.D);
    const auto plans = plan_function(module, "decode", "h200", nullptr, 64);  // the whole space, not the kept 8
    const plan::RegionPlan* plan = attention_plan(plans);
    ASSERT_NE(plan, nullptr) << where;
    const int64_t group = shape.NH / shape.KV;
    for (const plan::Candidate* c : of_family(*plan, "attention_decode")) {
      if (c->params.at("cluster") == 0) continue;
      const int64_t row = group * (shape.D + 2) * 4;  // one partial: GROUP x (D accumulators + max + sum) floats
      const int64_t static_bytes = (c->params.at("threads") / 32 + c->params.at("splits")) * row;
      EXPECT_LE(static_bytes, 48 * 1024) << where << ": " << c->name();
      auto source = codegen::render_source(*c);
      ASSERT_TRUE(source.has_value()) << source.status().to_string();
      jobs.push_back({c->name(), *source});
    }
  }
  ASSERT_FALSE(jobs.empty()) << "no cluster candidate kept for any shape";
  if (!include) GTEST_SKIP() << include.status().to_string();
  auto results = codegen::compile_all(jobs, nvrtc_options("sm_90a"));
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  for (const auto& result : *results) EXPECT_TRUE(result.ok) << result.kernel << ":\n" << result.log;
}

// A scale other than 1/sqrt(D) is spelled in the name and written into the source exactly.
TEST(AttentionReference, NonDefaultScaleIsSpelledAndRendered) {
  const ir::Module module = attention_module(ir::DType::kBF16, 4, 2, 16, 0.5, ir::DType::kBF16);
  const auto plans = plan_function(module, "prefill", "h200");
  const plan::RegionPlan* plan = attention_plan(plans);
  ASSERT_NE(plan, nullptr);
  auto refs = of_family(*plan, "attention_reference");
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_NE(refs.front()->name().find("_sc3f000000"), std::string::npos) << refs.front()->name();
  auto source = codegen::render_source(*refs.front());
  ASSERT_TRUE(source.has_value());
  EXPECT_NE(source->find("p.scale = 0x1p-1f;"), std::string::npos) << *source;
}

// The f32 RoPE (+ QK-norm) + KV-append regions of the tiny checkpoints: matched by rope_kv, every
// candidate (4-, 8-, 16- and 32-byte lane accesses) compiles. In decode they open the attention
// region, where only the reference family takes f32: its first launch is the rope_kv kernel.
TEST(FallbackCoverage, F32RopeKvCandidatesCompile) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  std::vector<codegen::CompileJob> jobs;
  for (const char* model : {"tests/fixtures/configs/tiny-llama.json", "tests/fixtures/configs/tiny-qwen3.json", "configs/qwen3-1.7b.json"}) {
    const ir::Module module = build_model(model, ir::DType::kF32);
    for (const char* function : {"prefill", "decode"}) {
      int rope_regions = 0;
      for (const auto& plan : plan_function(module, function, "h200")) {
        auto ropes = of_family(plan, "rope_kv");
        if (std::string(function) == "decode") {
          EXPECT_TRUE(ropes.empty()) << label(model, ir::DType::kF32, function) << ": decode RoPE opens the attention region";
          for (const plan::Candidate* c : of_family(plan, "attention_reference")) {
            ++rope_regions;
            ASSERT_EQ(c->launches.size(), 2u) << c->name();
            auto source = codegen::render_source(*c);
            ASSERT_TRUE(source.has_value()) << source.status().to_string();
            EXPECT_NE(source->find("ac::rope_kv</*T=*/float"), std::string::npos) << *source;
            jobs.push_back({c->name(), *source});
          }
          continue;
        }
        if (ropes.empty()) continue;
        ++rope_regions;
        int fallbacks = 0;
        for (const plan::Candidate* c : ropes) {
          EXPECT_EQ(c->match.dtype, ir::DType::kF32);
          fallbacks += c->fallback;
          auto source = codegen::render_source(*c);
          ASSERT_TRUE(source.has_value()) << source.status().to_string();
          jobs.push_back({c->name(), *source});
        }
        EXPECT_EQ(fallbacks, 1) << label(model, ir::DType::kF32, function);
      }
      EXPECT_EQ(rope_regions, 1) << label(model, ir::DType::kF32, function);
    }
  }
  auto results = codegen::compile_all(jobs, nvrtc_options("sm_90a"));
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  for (const auto& result : *results) EXPECT_TRUE(result.ok) << result.kernel << ":\n" << result.log;
}

// What the reference family cannot do, it declines with a reason that names the problem.
TEST(AttentionReference, RejectsWhatItCannotDoWithAReason) {
  auto rejection = [](const ir::Module& module, const std::string& function_name, analysis::RegionKind kind) {
    const ir::Function& function = *module.find_function(function_name);
    auto partition = analysis::form_regions(module, function);
    auto unique = analysis::unique_regions(module, function, partition, {1, 2048});
    for (const auto& entry : unique) {
      const analysis::Region& region = partition.regions[static_cast<size_t>(entry.sites.front())];
      if (region.kind != kind) continue;
      plan::RegionContext ctx{&module, &function, &region, &entry.summary};
      const std::string reason = plan::attention_reference_rejection(ctx);
      const auto h200 = *plan::named_device_profile("h200");
      EXPECT_EQ(plan::find_family("attention_reference")->candidates(ctx, h200).has_value(), reason.empty()) << reason;
      return reason;
    }
    ADD_FAILURE() << "no region of the kind asked for";
    return std::string();
  };
  using analysis::RegionKind;
  // Accepted: f32 with an odd head dimension.
  EXPECT_EQ(rejection(attention_module(ir::DType::kF32, 3, 3, 13), "prefill", RegionKind::kAttention), "");
  // Too wide a head for a tile of 8 keys in 48 KB of shared memory; no family is left for the region.
  const ir::Module wide = attention_module(ir::DType::kF16, 4, 2, 640);
  const std::string too_wide = rejection(wide, "decode", RegionKind::kAttention);
  EXPECT_NE(too_wide.find("head_dim 640"), std::string::npos) << too_wide;
  const plan::RegionPlan* plan_wide = nullptr;
  const auto wide_plans = plan_function(wide, "decode", "h200");
  plan_wide = attention_plan(wide_plans);
  ASSERT_NE(plan_wide, nullptr);
  EXPECT_TRUE(plan_wide->candidates.empty());
  EXPECT_FALSE(plan_wide->unplanned_reason.empty());
  // Queries and cache of different dtypes.
  const std::string mixed = rejection(attention_module(ir::DType::kF32, 4, 2, 64, 0.125, ir::DType::kBF16), "prefill", RegionKind::kAttention);
  EXPECT_NE(mixed.find("mixed dtypes"), std::string::npos) << mixed;
  // Not attention at all: the kv_append region of the same module.
  const std::string other = rejection(attention_module(ir::DType::kF16, 4, 2, 64), "prefill", RegionKind::kFusion);
  EXPECT_NE(other.find("not an attention region"), std::string::npos) << other;
}

}  // namespace
}  // namespace agentcompile
