// On the GPU: every region of Qwen3-1.7B's and Llama-3.2-1B's decode_batch (ir/decode_batch.h), every
// candidate, through admission against the reference interpreter (outputs poisoned with NaN, inputs
// checked unchanged, seeds x distributions), at batches of 1, 3, 8 and 16 sequences, each row in a slot
// of its own at a random position inside it (tune/input_domains.h): the per-row rope_kv and reference
// attention kernels (ROWS), and the GEMM/cuBLAS/row families at T = batch. Every candidate must
// validate: no variant here is numerically risky, so a rejection is a bug.
#include <cstdio>

#include "gpu_test_support.h"
#include "ir/decode_batch.h"
#include "plan/sizes.h"

namespace agentcompile {
namespace {

struct Totals {
  int candidates = 0, validated = 0;
};

void admit_every_region(const gpu::DeviceInfo& gpu, const char* config, ir::DType dtype, const tune::RegionBindings& b,
                        Totals& totals) {
  ir::Module module = testing::build_config_module(config, dtype);
  ASSERT_TRUE(ir::add_decode_batch(module).is_ok());
  const ir::Function& f = *module.find_function(ir::kDecodeBatchFunction);
  auto partition = analysis::form_regions(module, f);
  auto unique = analysis::unique_regions(module, f, partition, plan::summary_bindings(f.name, 16));
  auto profile = plan::named_device_profile("h200");
  for (const auto& p : plan::plan_function(module, f, partition, unique, *profile, plan::PlannerOptions{})) {
    std::printf("== %s %s T=%lld L=%lld r%d %s:", config, ir::dtype_name(dtype).data(), (long long)b.T, (long long)b.L, p.unique_id,
                analysis::category_name(p.summary.category));
    for (const auto& op : p.summary.op_sequence) std::printf(" %s", op.c_str());
    std::printf("\n");
    ASSERT_FALSE(p.candidates.empty()) << config << " r" << p.unique_id << ": " << p.unplanned_reason;
    const auto& region = partition.regions[static_cast<size_t>(p.sites.front())];
    auto region_module = analysis::extract_region(module, f, region);
    ASSERT_TRUE(region_module.has_value()) << region_module.status().to_string();
    auto cases = tune::build_region_cases(*region_module, b, 2, {tune::Distribution::kNormal, tune::Distribution::kHeavyTailed});
    ASSERT_TRUE(cases.has_value()) << cases.status().to_string();
    auto compiled = testing::compile_candidates(p.candidates, gpu::nvrtc_arch(gpu));
    tune::AdmitOptions options;
    options.repetitions = 10;
    auto results = tune::admit_candidates(*region_module, b, *cases, p.candidates, compiled, options);
    ASSERT_TRUE(results.has_value()) << results.status().to_string();
    for (const tune::CandidateResult& r : *results) {
      std::printf("  %-4s %-84s %s err %.2e %9.2f us  %s\n", r.id.c_str(), r.name.c_str(), r.validated ? "ok " : "REJ", r.max_rel_error,
                  r.median_us, r.rejection.substr(0, 200).c_str());
      ++totals.candidates;
      totals.validated += r.validated;
      EXPECT_TRUE(r.validated) << config << " T=" << b.T << " r" << p.unique_id << " " << r.name << ": " << r.rejection;
    }
    std::fflush(stdout);  // keep what was seen if a time limit ends the run
  }
}

TEST(DecodeBatchAdmission, EveryRegionAtEveryBatch) {
  AC_REQUIRE_GPU();
  Totals totals;
  for (int64_t batch : {1, 3, 8, 16}) {
    const tune::RegionBindings b{batch, batch * 300, 0};  // slots of 300 rows, positions 0..299 per row
    admit_every_region(*gpu, "qwen3-1.7b.json", ir::DType::kBF16, b, totals);
    admit_every_region(*gpu, "llama-3.2-1b.json", ir::DType::kF16, b, totals);
  }
  std::printf("decode_batch admission: %d of %d candidates validated\n", totals.validated, totals.candidates);
  EXPECT_GT(totals.candidates, 0);
}

}  // namespace
}  // namespace agentcompile
