// The runtime's host side, without a GPU: reading an artifact back, planning activation memory
// over the region sites (no two live values share bytes; views resolve to their root), refusing
// artifacts that do not fit the model or lack a kernel, and writing logits files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <map>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "frontend/model_builder.h"
#include "frontend/model_config.h"
#include "ir/text.h"
#include "runtime/artifact_reader.h"
#include "emit/artifact_fit.h"
#include "runtime/logits_file.h"
#include "runtime/memory_plan.h"
#include "command_runner.h"

namespace agentcompile::runtime {
namespace {

namespace fs = std::filesystem;

int run(const std::string& command, std::string* output) {
  testing::CommandRun r = testing::run_command(command);
  output->append(r.output);
  return r.status;
}

const fs::path kConfig = fs::path(AC_SOURCE_DIR) / "tests/fixtures/configs/small-qwen3.json";

// One no-GPU compile shared by the tests of this file.
const fs::path& artifact_dir() {
  static const fs::path dir = [] {
    // ctest runs each test of this file as its own process, in parallel: one directory per process.
    const fs::path work = fs::path(AC_BINARY_DIR) / ("runtime-plan-test-" + std::to_string(getpid()));
    fs::remove_all(work);
    std::string output;
    const int rc = run(std::string(AC_CLI) + " compile " + kConfig.string() + " -o " + (work / "artifact").string() +
                           " --no-gpu --max-candidates 2 --cache-dir " + (work / "cache").string(),
                       &output);
    EXPECT_EQ(rc, 0) << output;
    return work / "artifact";
  }();
  return dir;
}

ir::Module module_of_config() {
  auto config = frontend::read_hf_config(kConfig);
  EXPECT_TRUE(config) << config.status().to_string();
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module) << module.status().to_string();
  return *module;
}

TEST(RuntimeArtifact, ReadsEverySiteWithAKernelPerBucket) {
  auto artifact = read_artifact(artifact_dir());
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  for (const char* name : {"prefill", "decode"}) {
    const FunctionRecord& f = artifact->functions.at(name);
    ASSERT_FALSE(f.sites.empty());
    for (const auto& site : f.sites) {
      const RegionRecord& region = artifact->regions.at(site.region);
      for (const auto& bucket : f.buckets) {
        auto s = region.selection.find(bucket.name);
        ASSERT_NE(s, region.selection.end()) << site.region << " " << bucket.name;
        const SelectedKernel& k = region.kernels[s->second];
        EXPECT_FALSE(k.candidate.launches.empty());
        const bool generated = std::any_of(k.candidate.launches.begin(), k.candidate.launches.end(), [](const plan::Launch& l) { return !l.library; });
        EXPECT_EQ(generated, !k.cubin.empty()) << k.candidate.name();
      }
    }
  }
  auto bucket = artifact->functions.at("prefill").bucket_for(300, 300);
  ASSERT_TRUE(bucket);
  EXPECT_EQ((*bucket)->name, "t65-512");
  const FunctionRecord& decode = artifact->functions.at("decode");
  EXPECT_FALSE(decode.bucket_for(2, 100));
  // Decode buckets follow the context (the keys a step's attention reads), up to the model's maximum.
  auto short_context = decode.bucket_for(1, 100);
  ASSERT_TRUE(short_context) << short_context.status().to_string();
  EXPECT_EQ((*short_context)->name, "decode");
  ASSERT_EQ(decode.buckets.size(), 2u);  // this model's context (2048) ends inside the second bucket
  EXPECT_EQ(decode.buckets.front().max_context, 512);
  auto medium_context = decode.bucket_for(1, 600);
  ASSERT_TRUE(medium_context) << medium_context.status().to_string();
  EXPECT_EQ((*medium_context)->name, "decode-c513-4096");
  EXPECT_EQ(decode.buckets.back().max_context, 2048);
  EXPECT_FALSE(decode.bucket_for(1, 2049));
}

// Every pair of arena values alive at the same site must not overlap.
void expect_no_overlap(const ir::Function& f, const std::vector<SiteRecord>& sites, const MemoryPlan& plan, const ir::SymbolBindings& at) {
  std::map<ir::ValueId, std::pair<int, int>> live;  // value -> [defined, last read]
  for (int s = 0; s < static_cast<int>(sites.size()); ++s) {
    for (ir::ValueId out : sites[static_cast<size_t>(s)].outputs)
      if (plan.homes[static_cast<size_t>(out)].kind == ValueHome::Kind::kArena) live[out] = {s, s};
    for (ir::ValueId in : sites[static_cast<size_t>(s)].inputs) {
      auto r = resolve_value(f, in, at);
      ASSERT_TRUE(r) << r.status().to_string();
      if (live.count(r->root)) live[r->root].second = s;
    }
  }
  for (ir::ValueId result : f.results) {
    auto r = resolve_value(f, result, at);
    ASSERT_TRUE(r);
    if (live.count(r->root)) live[r->root].second = static_cast<int>(sites.size());
  }
  for (auto a = live.begin(); a != live.end(); ++a) {
    const size_t a0 = plan.homes[static_cast<size_t>(a->first)].offset, a1 = a0 + static_cast<size_t>(value_bytes(f, a->first, at));
    EXPECT_LE(a1, plan.arena_bytes);
    for (auto b = std::next(a); b != live.end(); ++b) {
      const bool together = a->second.first <= b->second.second && b->second.first <= a->second.second;
      if (!together) continue;
      const size_t b0 = plan.homes[static_cast<size_t>(b->first)].offset, b1 = b0 + static_cast<size_t>(value_bytes(f, b->first, at));
      EXPECT_TRUE(a1 <= b0 || b1 <= a0) << "%" << f.value(a->first).name << " and %" << f.value(b->first).name << " overlap";
    }
  }
}

TEST(RuntimeMemoryPlan, LiveValuesNeverShareBytesAndTheArenaIsReused) {
  auto artifact = read_artifact(artifact_dir());
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  const ir::Module module = module_of_config();
  for (const auto& [name, tokens] : std::vector<std::pair<std::string, int64_t>>{{"prefill", 512}, {"decode", 1}}) {
    const ir::Function& f = *module.find_function(name);
    const auto& sites = artifact->functions.at(name).sites;
    const ir::SymbolBindings at{tokens, 64};
    auto plan = plan_memory(f, sites, at);
    ASSERT_TRUE(plan) << plan.status().to_string();
    EXPECT_GT(plan->arena_bytes, 0u);
    EXPECT_LT(plan->arena_bytes * (name == "prefill" ? 4 : 2), plan->naive_bytes) << name << ": the arena should reuse dead values' bytes";
    expect_no_overlap(f, sites, *plan, at);
    // KV appends land in their states; the function's arguments stay the engine's. In decode the
    // appends are internal to the attention regions they open, so no value lives in a state there,
    // but every state is still written by exactly one site.
    size_t states = 0, written = 0;
    for (const auto& home : plan->homes) states += home.kind == ValueHome::Kind::kState;
    for (const auto& site : sites) written += site.states.size();
    EXPECT_EQ(states, name == "prefill" ? module.states.size() : 0u) << name;
    EXPECT_EQ(written, module.states.size()) << name;
  }
}

TEST(RuntimeMemoryPlan, LastTokenSliceResolvesToItsRow) {
  const ir::Module module = module_of_config();
  const ir::Function& prefill = *module.find_function("prefill");
  bool found = false;
  for (const auto& node : prefill.nodes) {
    if (node.op != ir::OpKind::kSlice) continue;
    auto r = resolve_value(prefill, node.result, ir::SymbolBindings{100, 64});
    ASSERT_TRUE(r) << r.status().to_string();
    const auto& source = prefill.type(node.operands[0]);
    const int64_t row = static_cast<int64_t>(ir::dtype_size(source.dtype)) * source.shape.back().value;
    EXPECT_EQ(r->byte_offset, 99 * row);  // the last of 100 rows
    found = true;
  }
  EXPECT_TRUE(found) << "prefill should slice the last token before the LM head";
}

TEST(RuntimeArtifact, RefusesArtifactsThatDoNotFit) {
  const ir::Module module = module_of_config();
  const std::string ir_text = ir::print_module(module);
  auto config = frontend::read_hf_config(kConfig);
  ASSERT_TRUE(config);
  EXPECT_NE(emit::artifact_incompatibility(artifact_dir(), *config, ir_text, "sm_90a").find("without a GPU"), std::string::npos);
  EXPECT_NE(emit::artifact_incompatibility(artifact_dir(), *config, ir_text, "sm_80").find("built for sm_90a"), std::string::npos);
  auto other = frontend::read_hf_config(fs::path(AC_SOURCE_DIR) / "tests/fixtures/configs/tiny-qwen3.json");
  ASSERT_TRUE(other) << other.status().to_string();
  auto other_module = frontend::build_module(*other);
  ASSERT_TRUE(other_module) << other_module.status().to_string();
  EXPECT_NE(emit::artifact_incompatibility(artifact_dir(), *other, ir::print_module(*other_module), "sm_90a").find("another model configuration"),
            std::string::npos);
  // The IR decides: another model whose graph is this one's, byte for byte, may use the artifact (a capture and
  // the builder of the same architecture share one); only the device and validation checks remain.
  EXPECT_EQ(emit::artifact_incompatibility(artifact_dir(), *other, ir_text, "sm_90a").find("another model configuration"), std::string::npos);
  EXPECT_NE(emit::artifact_incompatibility(artifact_dir() / "nowhere", *config, ir_text, "sm_90a").find("no metadata.json"), std::string::npos);
}

TEST(RuntimeArtifact, MissingKernelAndMalformedMetadataAreErrors) {
  const fs::path copy = artifact_dir().parent_path() / "broken";
  fs::remove_all(copy);
  fs::copy(artifact_dir(), copy, fs::copy_options::recursive);
  fs::path victim;  // a region's kernel, not the sampler's (RuntimeArtifact.SamplerShipsInTheArtifact)
  for (const auto& entry : fs::directory_iterator(copy / "cubin"))
    if (entry.path().filename() != "ac_sample.cubin") victim = entry.path();
  ASSERT_FALSE(victim.empty());
  fs::remove(victim);
  auto missing = read_artifact(copy);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("lacks the kernel selected for region"), std::string::npos) << missing.status().to_string();
  EXPECT_NE(missing.status().message().find(victim.filename().string()), std::string::npos) << missing.status().to_string();

  std::string text;
  {
    std::ifstream in(copy / "metadata.json");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::ofstream(copy / "metadata.json") << text.substr(0, text.size() / 2);
  auto truncated = read_artifact(copy);
  ASSERT_FALSE(truncated);
  EXPECT_EQ(truncated.status().code(), ErrorCode::kParse);
}

// The sampler is compiled with the model's kernels and read from the artifact; an artifact written
// before it shipped there (no "runtime_kernels" in metadata.json) is refused with a request to
// recompile, by the reader and by the fit check that compile on first use consults, never a crash.
TEST(RuntimeArtifact, SamplerShipsInTheArtifact) {
  auto artifact = read_artifact(artifact_dir());
  ASSERT_TRUE(artifact) << artifact.status().to_string();
  ASSERT_EQ(artifact->runtime_cubins.count("sampler"), 1u);
  EXPECT_FALSE(artifact->runtime_cubins.at("sampler").empty());
  EXPECT_TRUE(fs::exists(artifact_dir() / "cubin" / "ac_sample.cubin"));

  const fs::path missing = artifact_dir().parent_path() / "no-sampler-cubin";
  fs::remove_all(missing);
  fs::copy(artifact_dir(), missing, fs::copy_options::recursive);
  fs::remove(missing / "cubin" / "ac_sample.cubin");
  auto without_cubin = read_artifact(missing);
  ASSERT_FALSE(without_cubin);
  EXPECT_NE(without_cubin.status().message().find("sampler kernel"), std::string::npos) << without_cubin.status().to_string();

  // An artifact of before: metadata.json without runtime_kernels (its files still verify).
  const fs::path old = artifact_dir().parent_path() / "before-runtime-kernels";
  fs::remove_all(old);
  fs::copy(artifact_dir(), old, fs::copy_options::recursive);
  nlohmann::json meta;
  {
    std::ifstream in(old / "metadata.json");
    meta = nlohmann::json::parse(in);
  }
  ASSERT_TRUE(meta.contains("runtime_kernels"));
  meta.erase("runtime_kernels");
  meta["gpu_used"] = true;  // so that the sampler is all it lacks to fit
  auto& files = meta["files"];
  files.erase(std::remove_if(files.begin(), files.end(), [](const nlohmann::json& f) { return f["path"] == "cubin/ac_sample.cubin"; }), files.end());
  fs::remove(old / "cubin" / "ac_sample.cubin");
  std::ofstream(old / "metadata.json") << meta.dump(1) << "\n";
  auto refused = read_artifact(old);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), ErrorCode::kMismatch);
  EXPECT_NE(refused.status().message().find("compiled before the runtime's kernels shipped"), std::string::npos) << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("compile it again"), std::string::npos) << refused.status().to_string();
  const std::string ir_text = ir::print_module(module_of_config());
  auto config = frontend::read_hf_config(kConfig);
  ASSERT_TRUE(config);
  EXPECT_NE(emit::artifact_incompatibility(old, *config, ir_text, "sm_90a").find("no sampler kernel"), std::string::npos);
}

TEST(LogitsFile, NpyHeaderAndDataRoundTrip) {
  const fs::path path = fs::path(AC_BINARY_DIR) / "runtime-plan-test-logits.npy";
  const std::vector<float> values = {1.f, -2.f, 3.5f, 0.f, 7.f, -0.25f};
  ASSERT_TRUE(write_logits(path, values, 2, 3));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(1, 5), "NUMPY");
  const size_t header = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  EXPECT_EQ((10 + header) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
  ASSERT_EQ(bytes.size(), 10 + header + values.size() * 4);
  std::vector<float> back(values.size());
  std::memcpy(back.data(), bytes.data() + 10 + header, values.size() * 4);
  EXPECT_EQ(back, values);
  EXPECT_FALSE(write_logits(fs::path(AC_BINARY_DIR) / "x.txt", values, 2, 3));
  EXPECT_FALSE(write_logits(path, values, 4, 3));
}

}  // namespace
}  // namespace agentcompile::runtime
