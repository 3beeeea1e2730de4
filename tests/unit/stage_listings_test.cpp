// The --dump-ir listings each stage library writes for one region: the candidate spaces of a real
// plan (golden: tests/golden/listings/), and the advised order, NVRTC's results, admission and the
// picks for a region made by hand, where every case is spelled out below.
#include <gtest/gtest.h>

#include "advisor/order_listing.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/compile_listing.h"
#include "frontend/model_builder.h"
#include "golden.h"
#include "plan/candidate_listing.h"
#include "plan/sizes.h"
#include "tune/admission_listing.h"

namespace agentcompile {
namespace {

// Every region of `function` of the tiny Qwen3 in f16 as the compile plans it for an H200.
std::string candidate_listing(const std::string& function_name) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/tests/fixtures/configs/tiny-qwen3.json");
  EXPECT_TRUE(config.has_value());
  config->dtype = ir::DType::kF16;  // the generated families' dtype (f32 regions get the library and reference kernels)
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value());
  const ir::Function& function = *module->find_function(function_name);
  const auto partition = analysis::form_regions(*module, function);
  const auto unique = analysis::unique_regions(*module, function, partition, plan::summary_bindings(function_name, 1));
  const auto profile = plan::named_device_profile("h200");
  std::string text;
  for (const auto& region : plan::plan_function(*module, function, partition, unique, *profile, plan::PlannerOptions{}))
    text += plan::describe_candidates(region);
  return text;
}

TEST(StageListings, CandidateSpacesOfARealPlan) {
  testing::expect_golden("listings/tiny_qwen3_decode.candidates.txt", candidate_listing("decode"));
  testing::expect_golden("listings/tiny_qwen3_prefill.candidates.txt", candidate_listing("prefill"));
}

// r2: a generated GEMV in two schedules and the cuBLAS fallback.
plan::RegionPlan hand_made_plan() {
  plan::RegionPlan plan;
  plan.function = "decode";
  plan.unique_id = 2;
  plan.sites = {3, 9};
  plan.enumerated = 5;
  plan.families_matched = {"gemv", "cublas_gemm"};
  plan.summary.category = analysis::Category::kGemv;
  for (int i = 0; i < 3; ++i) {
    plan::Candidate c;
    c.id = "c" + std::to_string(i);
    c.family = i < 2 ? "gemv" : "cublas_gemm";
    c.spelled_name = i < 2 ? "gemv_f16_t" + std::to_string(128 << i) + "_v8" : "cublas_gemm_f16";
    c.fusion = "full";
    c.score = 3.5 - i;
    c.fallback = i == 2;
    if (i < 2) c.params = {{"threads", 128 << i}, {"vector_width", 8}};
    plan::Launch launch;
    launch.kernel = c.spelled_name;
    launch.library = i == 2;
    c.launches = {launch};
    plan.candidates.push_back(c);
  }
  return plan;
}

TEST(StageListings, CandidateSpaceSpellsEveryCandidate) {
  EXPECT_EQ(plan::describe_candidates(hand_made_plan()),
            "r2 gemv x2, families matched: gemv cublas_gemm; kept 3 of 5 enumerated\n"
            "  c0 gemv gemv_f16_t128_v8 fusion full score 3.5 {threads=128, vector_width=8}\n"
            "  c1 gemv gemv_f16_t256_v8 fusion full score 2.5 {threads=256, vector_width=8}\n"
            "  c2 cublas_gemm cublas_gemm_f16 fusion full score 1.5 fallback {}\n");
  plan::RegionPlan unplanned = hand_made_plan();
  unplanned.candidates.clear();
  unplanned.unplanned_reason = "no family matched scan";
  EXPECT_NE(plan::describe_candidates(unplanned).find("  no candidates: no family matched scan\n"), std::string::npos);
}

TEST(StageListings, AdvisedOrderWithWhatWasAcceptedAndRejected) {
  advisor::RegionAdvice none;
  none.why = "no advisor";
  EXPECT_EQ(advisor::describe_order(hand_made_plan(), none, {0, 1, 2}, "heuristic", 0),
            "r2: heuristic order, budget all: c0 c1 c2\n  advisor none, not asked: no advisor\n");

  advisor::RegionAdvice advice;
  advice.backend = "replay:advice.json";
  advice.asked = true;
  advice.why = "scope all";
  advice.exchange = advisor::Exchange{};
  advice.exchange->ok = true;
  advice.verdict.label = "gemv";
  advice.verdict.priority = {"c1"};
  advice.verdict.hints = {{"threads", 256}};
  advice.verdict.rejected.push_back({"priority[1]", "c9", "unknown_candidate", "the region has no candidate c9"});
  EXPECT_EQ(advisor::describe_order(hand_made_plan(), advice, {1, 0, 2}, "advisor", 2),
            "r2: advisor order, budget 2: c1 c0 c2\n"
            "  advisor replay:advice.json, asked: scope all; answered\n"
            "  accepted label gemv\n"
            "  accepted priority c1\n"
            "  accepted hint threads=256\n"
            "  rejected priority[1] (unknown_candidate): the region has no candidate c9\n");
}

TEST(StageListings, CompileResultsWithoutWhatDiffersBetweenCompiles) {
  std::vector<codegen::CompileResult> compiled(3);
  compiled[0].ok = true;
  compiled[0].cache_hit = true;  // not listed: a second compile of the same model hits the cache
  compiled[1].log = "\n  \nkernel.cu(12): error: identifier \"x\" is undefined\nmore\n";
  EXPECT_EQ(codegen::describe_compiles(hand_made_plan(), compiled),
            "r2: 1 of 2 sources compiled\n"
            "  c0 gemv_f16_t128_v8: compiled\n"
            "  c1 gemv_f16_t256_v8: failed: kernel.cu(12): error: identifier \"x\" is undefined\n"
            "  c2 cublas_gemm_f16: library call, nothing to compile\n");
}

TEST(StageListings, AdmissionWithItsMeasurements) {
  tune::AdmittedRegion skipped;
  skipped.search.note = "no GPU: nothing measured; the order and budget are recorded";
  EXPECT_EQ(tune::describe_admission(hand_made_plan(), skipped),
            "r2: not admitted (no GPU: nothing measured; the order and budget are recorded)\n");

  tune::AdmittedRegion admitted;
  admitted.search.order = {1, 0, 2};
  admitted.search.order_source = "advisor";
  admitted.search.measured = {true, true, false};
  admitted.search.spent = 2;
  admitted.results.resize(3);
  admitted.results[0].rejection = "wrong numbers: out0 max abs error 3.2 > 0.01\nat index 7";
  admitted.results[1].validated = true;
  admitted.results[1].max_abs_error = 0.00125;
  admitted.results[1].max_rel_error = 0.004;
  admitted.results[1].cases = 6;
  tune::Timing timing;
  timing.bindings = {1, 512, 77};
  timing.median_us = 3.214;
  admitted.results[1].timings = {timing};
  EXPECT_EQ(tune::describe_admission(hand_made_plan(), admitted),
            "r2: spent 2 of 3 in advisor order\n"
            "  c0 gemv_f16_t128_v8: rejected: wrong numbers: out0 max abs error 3.2 > 0.01\n"
            "  c1 gemv_f16_t256_v8: validated (max abs 0.00125, rel 0.004, 6 cases); T=1 L=512 pos=77: 3.21 us\n"
            "  c2 cublas_gemm_f16: not measured (outside the search budget)\n");
}

TEST(StageListings, PicksWithoutTheirTimes) {
  const std::vector<tune::Selection> picks = {{"decode", 1, "fastest validated: 3.21 us vs fallback cublas_gemm 5.00 us", true},
                                              {"decode-c513-4096", 2, "fallback: no validated candidate beat it (5.00 us)", true},
                                              {"decode-c4097-16384", -1, "no candidate validated; c0: wrong numbers", false},
                                              {"decode-c16385+", 0, "unmeasured: no GPU, heuristic order", false}};
  EXPECT_EQ(tune::describe_selections(hand_made_plan(), picks),
            "r2:\n"
            "  decode: c1 gemv_f16_t256_v8 (fastest validated)\n"
            "  decode-c513-4096: c2 cublas_gemm_f16 (fallback)\n"
            "  decode-c4097-16384: none (no candidate validated)\n"
            "  decode-c16385+: c0 gemv_f16_t128_v8 (unmeasured)\n");
  EXPECT_EQ(tune::describe_selections(hand_made_plan(), {}), "r2: no selection\n");
}

}  // namespace
}  // namespace agentcompile
