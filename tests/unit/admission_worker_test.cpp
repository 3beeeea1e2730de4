// The compile's GPU worker (tune/admission_worker.h) on a machine without a GPU: candidates that did
// not compile are answered without starting a worker, and a worker that cannot create its CUDA
// context ends the request with an error that says why, promptly, every time it is asked (no hang,
// no crash of the caller). The protocol's happy path runs in tests/gpu/planted_candidates_test.cpp.
#include <gtest/gtest.h>

#include <chrono>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "gpu/device_probe.h"
#include "model_fixtures.h"
#include "tune/admission_worker.h"

namespace agentcompile::tune {
namespace {

TEST(AdmissionWorker, WithoutAGpuItSaysWhyAndCompileErrorsNeedNoWorker) {
  if (gpu::probe_device()) GTEST_SKIP() << "a GPU is present: tests/gpu covers the worker there";
  const ir::Module module = fixtures::tiny_model("tiny-qwen3.json");
  const ir::Function& decode = *module.find_function("decode");
  const auto partition = analysis::form_regions(module, decode);
  auto region_module = analysis::extract_region(module, decode, partition.regions.front());
  ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();

  std::vector<plan::Candidate> candidates(2);
  std::vector<codegen::CompileResult> compiled(2);
  for (size_t i = 0; i < 2; ++i) {
    candidates[i].id = "c" + std::to_string(i);
    candidates[i].launches.push_back(plan::Launch{});
    candidates[i].launches.back().kernel = "k" + std::to_string(i);
  }
  compiled[0].ok = true;
  compiled[1].log = "error: identifier \"oops\" is undefined";
  RegionWork work;
  work.id = "decode.r0";
  work.region_module = &*region_module;
  work.bindings = {1, 64, 20};
  work.seeds = 1;
  work.candidates = &candidates;
  work.compiled = &compiled;
  work.options.setup_timeout_s = 60;
  const std::vector<RegionWork> table = {work};
  AdmissionWorker worker(&table);

  EXPECT_FALSE(runnable(candidates[1], compiled[1]));
  size_t reported = 0;
  auto only_broken = worker.admit(0, {1}, [&](size_t position, const CandidateResult& r) {
    EXPECT_EQ(position, 0u);
    EXPECT_EQ(r.id, "c1");
    ++reported;
  });
  ASSERT_TRUE(only_broken.has_value()) << only_broken.status().to_string();
  ASSERT_EQ(only_broken->results.size(), 1u);
  EXPECT_EQ(only_broken->results[0].rejection.rfind("compile error: ", 0), 0u) << only_broken->results[0].rejection;
  EXPECT_NE(only_broken->results[0].rejection.find("oops"), std::string::npos);
  EXPECT_EQ(only_broken->times.workers, 0) << "nothing to run: no worker";
  EXPECT_EQ(reported, 1u);

  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto started = std::chrono::steady_clock::now();
    auto failed = worker.admit(0, {0, 1});
    ASSERT_FALSE(failed.has_value());
    EXPECT_NE(failed.status().message().find("admission worker"), std::string::npos) << failed.status().to_string();
    EXPECT_NE(failed.status().message().find("CUDA"), std::string::npos) << failed.status().to_string();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
  }
  EXPECT_FALSE(worker.admit(3, {0}).has_value()) << "no region 3";
  EXPECT_FALSE(worker.admit(0, {7}).has_value()) << "no candidate 7";

  AdmissionTimes times;
  auto chain = worker.time_chain({ChainStep{0, {0}, {1, 64, 20}, {}}}, {0}, SequenceOptions{}, times);
  EXPECT_FALSE(chain.has_value());
}

}  // namespace
}  // namespace agentcompile::tune
