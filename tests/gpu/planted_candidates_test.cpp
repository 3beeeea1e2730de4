// On the GPU: the shared reference still rejects wrong candidates. For four regions of Qwen3-1.7B
// (decode: a GEMV with a residual add, the norm + QKV GEMV, the attention with its RoPE / KV append
// prologue; prefill: an RMSNorm), each correct generated candidate gets planted twins: the same
// kernels plus one more launch that spoils the result after them: every output element four
// tolerances off, one element far off, one element NaN, an error in the last validation case only,
// an input written, a weight written (in the last case only, so only the check of the weights can
// see it). They go through admission as a compile sends them (one worker for the region, the
// reference cases built once in the worker and shared by every candidate), interleaved with the
// correct ones, then once more through admit_candidates with cases built here, and their results
// through the tuning database. Every correct candidate validates (also those after a rejected weight
// writer: the shared weights are restored), every planted one is rejected for its own reason, and a
// planted twin never meets its correct original's database entries.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>

#include "gpu_test_support.h"
#include "tune/admission_worker.h"
#include "tune/tuning_db.h"

namespace agentcompile {
namespace {

constexpr int kSeeds = 2;
const std::vector<tune::Distribution> kDistributions = {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed};

const char* c_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF16: return "__half";
    case ir::DType::kBF16: return "__nv_bfloat16";
    default: return "float";
  }
}

const char* bits_type(size_t bytes) { return bytes == 2 ? "unsigned short" : "unsigned int"; }

// What the planted launches need to know about the region and its cases (built here with the seeds
// the worker uses, so the data is the same bit for bit).
struct Target {
  int output = -1;       // a plain float output
  ir::DType out_dtype = ir::DType::kF16;
  int64_t elements = 0;  // of that output
  double tolerance = 0;
  int input = -1;        // a float input whose element `element` tells the last case from the others
  size_t input_bytes = 2;
  int64_t element = 0;
  uint32_t last_bits = 0;       // that element's bits in the last case
  uint8_t first_input_byte = 0; // byte 0 of input `input` in the first case
  bool has_weight = false;
  uint8_t weight_byte = 0;      // byte 0 of weight 0
};

std::optional<Target> find_target(const tune::RegionLayout& layout, const std::vector<tune::RegionCase>& cases) {
  Target t;
  for (size_t o = 0; o < layout.outputs.size() && t.output < 0; ++o)
    if (layout.output_state[o] < 0 && ir::is_float(layout.outputs[o].dtype)) t.output = static_cast<int>(o);
  if (t.output < 0) return std::nullopt;
  t.out_dtype = layout.outputs[static_cast<size_t>(t.output)].dtype;
  t.elements = cases.front().expected_outputs[static_cast<size_t>(t.output)].elements();
  t.tolerance = std::max(tune::tolerance_for(t.out_dtype), tune::tolerance_for(layout.precision));
  auto bits = [&](const tune::TestTensor& x, int64_t e, size_t size) {
    uint32_t v = 0;
    std::memcpy(&v, x.bytes.data() + static_cast<size_t>(e) * size, size);
    return v;
  };
  for (size_t i = 0; i < layout.inputs.size() && t.input < 0; ++i) {
    const auto& x = cases.back().inputs[i];
    if (!ir::is_float(x.dtype) || x.bytes.empty()) continue;
    const size_t size = ir::dtype_size(x.dtype);
    for (int64_t e = 0; e < std::min<int64_t>(x.elements(), 64) && t.input < 0; ++e) {
      bool unique = true;
      for (size_t k = 0; k + 1 < cases.size(); ++k) unique &= bits(cases[k].inputs[i], e, size) != bits(x, e, size);
      if (!unique) continue;
      t.input = static_cast<int>(i);
      t.input_bytes = size;
      t.element = e;
      t.last_bits = bits(x, e, size);
      t.first_input_byte = cases.front().inputs[i].bytes[0];
    }
  }
  if (t.input < 0) return std::nullopt;
  const auto& weights = cases.front().params;
  t.has_weight = !weights.empty() && !weights[0]->bytes.empty();
  if (t.has_weight) t.weight_byte = weights[0]->bytes[0];
  return t;
}

struct Plant {
  std::string name;
  std::string body;    // the planted kernel's body; `o` is the output, `n` its element count, `a` the arguments
  std::string expect;  // in the rejection
};

std::vector<Plant> plants(const Target& t, const std::string& last_label) {
  char scale[64], last[64];
  std::snprintf(scale, sizeof scale, "%.9g", 1 + 4 * t.tolerance);
  std::snprintf(last, sizeof last, "0x%xu", t.last_bits);
  const std::string in = "((const " + std::string(bits_type(t.input_bytes)) + "*)a.in[" + std::to_string(t.input) + "])";
  const std::string in_last = "if (" + in + "[" + std::to_string(t.element) + "] != " + last + ") return;";
  std::vector<Plant> out = {
      {"scale", "for (long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) planted_store(o, i, planted_load(o, i) * " +
                    std::string(scale) + "f);", "wrong numbers"},
      {"outlier", "if (blockIdx.x == 0 && threadIdx.x == 0) planted_store(o, n / 2, planted_load(o, n / 2) + 1000.f);", "wrong numbers"},
      {"nan", "if (blockIdx.x == 0 && threadIdx.x == 0) planted_store(o, n - 1, __int_as_float(0x7fc00000));", "NaN"},
      {"last_case", in_last + " if (blockIdx.x == 0 && threadIdx.x == 0) planted_store(o, 0, planted_load(o, 0) + 1000.f);", last_label},
      {"input", "if (blockIdx.x == 0 && threadIdx.x == 0) ((unsigned char*)a.in[" + std::to_string(t.input) + "])[0] = " +
                    std::to_string(static_cast<uint8_t>(~t.first_input_byte)) + ";",
       "input " + std::to_string(t.input) + " was modified"},
  };
  if (t.has_weight)
    out.push_back({"weight", in_last + " if (blockIdx.x == 0 && threadIdx.x == 0) ((unsigned char*)a.w[0])[0] = " +
                                 std::to_string(static_cast<uint8_t>(~t.weight_byte)) + ";",
                   "weight 0 was modified"});
  return out;
}

// The candidate with one more launch: the planted kernel, after its own.
plan::Candidate planted_twin(const plan::Candidate& base, const Plant& plant) {
  plan::Candidate c = base;
  c.id = base.id + "-" + plant.name;
  c.spelled_name = base.name() + "_planted_" + plant.name;
  plan::Launch launch;
  launch.kernel = "planted_" + plant.name;
  launch.grid_x = {0, 64, 1};
  launch.block_x = 256;
  c.launches.push_back(launch);
  c.fallback = false;
  return c;
}

std::string planted_source(const std::string& base_source, const Target& t, const Plant& plant) {
  const std::string type = c_type(t.out_dtype);
  return base_source + "\n__device__ float planted_load(const " + type + "* p, long i) { return (float)p[i]; }\n" +
         "__device__ void planted_store(" + type + "* p, long i, float v) { p[i] = (" + type + ")v; }\n" +
         "extern \"C\" __global__ void planted_" + plant.name + "(const ac::RegionArgs a) {\n  " + type + "* o = (" + type + "*)a.out[" +
         std::to_string(t.output) + "];\n  const long n = " + std::to_string(t.elements) + ";\n  (void)o; (void)n;\n  " + plant.body + "\n}\n";
}

void check_results(const std::vector<plan::Candidate>& candidates, const std::vector<std::string>& expect,
                   const std::vector<tune::CandidateResult>& results, const char* path) {
  ASSERT_EQ(results.size(), candidates.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    std::printf("  [%s] %-60s %s\n", path, candidates[i].name().c_str(), r.validated ? "valid" : r.rejection.substr(0, 150).c_str());
    if (expect[i].empty()) {
      EXPECT_TRUE(r.validated) << path << ": " << candidates[i].name() << " is correct: " << r.rejection;
      EXPECT_TRUE(r.measured) << candidates[i].name();
      for (const auto& t : r.timings)
        if (t.stopped_early) {
          EXPECT_GT(t.fastest_us, t.stop_bar_us * (1 + tune::kEarlyStopMargin)) << candidates[i].name();
        }
    } else {
      EXPECT_FALSE(r.validated) << path << ": planted " << candidates[i].name() << " was admitted";
      EXPECT_FALSE(r.faulted) << candidates[i].name() << ": " << r.rejection;
      EXPECT_NE(r.rejection.find(expect[i]), std::string::npos) << path << ": " << candidates[i].name() << ": " << r.rejection;
    }
  }
}

using RegionMatch = std::function<bool(const plan::RegionPlan&)>;

// A region with its cases, and its correct candidates each followed by their planted twins, compiled.
struct PlantedRegion {
  int unique_id = 0;
  std::string signature;
  std::optional<ir::Module> region_module;
  std::vector<tune::RegionCase> cases;
  std::vector<plan::Candidate> candidates;
  std::vector<std::string> expect;  // per candidate: "" (correct) or what its rejection must say
  std::vector<codegen::CompileResult> compiled;
};

void build_planted(const std::string& arch, const std::string& function_name, const RegionMatch& match, const tune::RegionBindings& bindings,
                   PlantedRegion* out) {
  ir::Module module = testing::build_config_module("qwen3-1.7b.json", ir::DType::kF16);
  const ir::Function& function = *module.find_function(function_name);
  const auto partition = analysis::form_regions(module, function);
  const auto unique = analysis::unique_regions(module, function, partition, {bindings.T, bindings.L});
  auto profile = plan::named_device_profile("h200");
  auto plans = plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
  const plan::RegionPlan* plan = nullptr;
  for (const auto& p : plans)
    if (!plan && match(p) && !p.candidates.empty()) plan = &p;
  ASSERT_NE(plan, nullptr) << function_name << ": no such region";
  std::string ops;
  for (const auto& op : plan->summary.op_sequence) ops += " " + op;
  std::printf("== %s r%d%s: %zu candidates\n", function_name.c_str(), plan->unique_id, ops.c_str(), plan->candidates.size());
  out->unique_id = plan->unique_id;
  out->signature = plan->summary.signature;
  auto region_module = analysis::extract_region(module, function, partition.regions[static_cast<size_t>(plan->sites.front())]);
  ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
  out->region_module = std::move(*region_module);
  auto layout = tune::region_layout(*out->region_module, bindings);
  ASSERT_TRUE(layout.has_value());
  auto cases = tune::build_region_cases(*out->region_module, bindings, kSeeds, kDistributions);
  ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
  out->cases = std::move(*cases);
  const auto target = find_target(*layout, out->cases);
  ASSERT_TRUE(target.has_value()) << "no float output, or no input element that tells the last case apart";

  // Up to two correct generated candidates, each followed by its planted twins.
  std::vector<codegen::CompileJob> jobs;
  const auto sources_ok = testing::compile_candidates(plan->candidates, arch);
  const size_t per_base = 1 + plants(*target, "").size();
  for (size_t i = 0; i < plan->candidates.size() && out->candidates.size() < 2 * per_base; ++i) {
    const plan::Candidate& base = plan->candidates[i];
    if (!codegen::has_generated_launch(base) || !sources_ok[i].ok ||
        std::any_of(base.launches.begin(), base.launches.end(), [](const plan::Launch& l) { return l.library; }))
      continue;
    auto source = codegen::render_source(base);
    ASSERT_TRUE(source.has_value());
    out->candidates.push_back(base);
    out->expect.push_back("");
    jobs.push_back({base.name(), *source});
    for (const Plant& plant : plants(*target, out->cases.back().label)) {
      out->candidates.push_back(planted_twin(base, plant));
      out->expect.push_back(plant.expect);
      jobs.push_back({out->candidates.back().name(), planted_source(*source, *target, plant)});
    }
  }
  ASSERT_FALSE(out->candidates.empty()) << "no generated candidate compiled";
  out->candidates.push_back(out->candidates.front());  // a correct one after the last weight writer
  out->expect.push_back("");
  jobs.push_back(jobs.front());
  codegen::NvrtcOptions nvrtc;
  nvrtc.arch = arch;
  nvrtc.isolate = true;  // this process forks admission workers afterwards
  auto compiled = codegen::compile_all(jobs, nvrtc);
  ASSERT_TRUE(compiled.has_value()) << compiled.status().to_string();
  for (size_t i = 0; i < compiled->size(); ++i) ASSERT_TRUE((*compiled)[i].ok) << jobs[i].kernel << "\n" << (*compiled)[i].log;
  out->compiled = std::move(*compiled);
}

void plant_and_admit(const gpu::DeviceInfo& gpu, const std::string& function_name, const RegionMatch& match,
                     const tune::RegionBindings& bindings) {
  PlantedRegion planted;
  build_planted(gpu::nvrtc_arch(gpu), function_name, match, bindings, &planted);
  if (::testing::Test::HasFatalFailure()) return;
  const std::vector<plan::Candidate>& candidates = planted.candidates;
  const std::vector<std::string>& expect = planted.expect;
  const ir::Module& region_module = *planted.region_module;

  // As a compile admits: one worker, the cases built once in it.
  tune::RegionWork work;
  work.id = function_name + ".planted";
  work.region_module = &region_module;
  work.bindings = bindings;
  work.seeds = kSeeds;
  work.distributions = kDistributions;
  work.candidates = &candidates;
  work.compiled = &planted.compiled;
  work.options.repetitions = 10;
  const std::vector<tune::RegionWork> table = {work};
  tune::AdmissionWorker worker(&table);
  std::vector<int> all(candidates.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  auto outcome = worker.admit(0, all);
  ASSERT_TRUE(outcome.has_value()) << outcome.status().to_string();
  check_results(candidates, expect, outcome->results, "worker");
  EXPECT_EQ(outcome->times.workers, 1) << "one worker for the region: nothing faulted";
  EXPECT_GT(outcome->times.reference_s, 0.0) << "the worker built the reference";
  EXPECT_EQ(outcome->times.candidates, static_cast<int>(candidates.size()));

  // With cases built here and handed over (the single-region path the other GPU tests use).
  auto results = tune::admit_candidates(region_module, bindings, planted.cases, candidates, planted.compiled, work.options);
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  check_results(candidates, expect, *results, "prebuilt");

  // Through the tuning database: rejections come back as rejections, and no twin shares an entry
  // with its original (its source differs).
  const std::filesystem::path dir = std::filesystem::path(AC_BINARY_DIR) / "planted-tuning-db" / (function_name + std::to_string(planted.unique_id));
  std::filesystem::remove_all(dir);
  const tune::TuningDb db(dir);
  tune::RegionTuningKey key;
  key.context = {{"format", tune::kTuningDbFormat}, {"region", planted.signature}, {"device", gpu.name}};
  key.validation = bindings;
  key.seeds = kSeeds;
  key.distributions = kDistributions;
  key.repetitions = work.options.repetitions;
  std::vector<std::string> warnings;
  tune::TuningFile file = db.load(key.context, warnings);
  std::vector<std::string> fingerprints;
  for (size_t i = 0; i < candidates.size(); ++i) {
    fingerprints.push_back(tune::candidate_fingerprint(candidates[i], planted.compiled[i]));
    tune::put_result(file, key, fingerprints.back(), outcome->results[i]);
  }
  ASSERT_TRUE(db.store(file).is_ok());
  const tune::TuningFile back = db.load(key.context, warnings);
  EXPECT_TRUE(warnings.empty());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto stored = tune::find_result(back, key, candidates[i], fingerprints[i], {bindings});  // timed where validated
    ASSERT_TRUE(stored.has_value()) << candidates[i].name();
    EXPECT_EQ(stored->validated, expect[i].empty()) << candidates[i].name();
    if (expect[i].empty()) continue;
    for (size_t j = 0; j < candidates.size(); ++j) {
      if (expect[j].empty()) {
        EXPECT_NE(fingerprints[i], fingerprints[j]) << candidates[i].name() << " vs " << candidates[j].name();
      }
    }
  }
}

bool ops_are(const plan::RegionPlan& p, const std::vector<std::string>& ops) { return p.summary.op_sequence == ops; }

TEST(PlantedCandidates, DecodeGemvResidual) {
  AC_REQUIRE_GPU();
  plant_and_admit(*gpu, "decode", [](const plan::RegionPlan& p) { return ops_are(p, {"linear", "add"}); }, {1, 512, 77});
}

TEST(PlantedCandidates, DecodeNormQkv) {
  AC_REQUIRE_GPU();
  plant_and_admit(*gpu, "decode", [](const plan::RegionPlan& p) { return ops_are(p, {"rmsnorm", "linear", "linear", "linear"}); }, {1, 512, 77});
}

TEST(PlantedCandidates, DecodeAttention) {
  AC_REQUIRE_GPU();
  plant_and_admit(*gpu, "decode", [](const plan::RegionPlan& p) { return p.summary.category == analysis::Category::kAttentionDecode; },
                  {1, 512, 77});
}

TEST(PlantedCandidates, PrefillRmsNorm) {
  AC_REQUIRE_GPU();
  plant_and_admit(*gpu, "prefill", [](const plan::RegionPlan& p) { return ops_are(p, {"rmsnorm"}); }, {100, 256, 28});
}

}  // namespace
}  // namespace agentcompile
