// Shared by GPU tests: skip without a GPU (probed in a forked child, so this process stays free
// of CUDA and can fork admission workers), and plan + admit a model's regions.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "analysis/extract.h"
#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "frontend/init_random.h"
#include "frontend/model_builder.h"
#include "plan/planner.h"
#include "gpu/device_probe.h"
#include "tune/admission.h"

namespace agentcompile::testing {

inline const gpu::DeviceInfo* gpu_or_skip_reason(std::string* why) {
  static const auto info = gpu::probe_device();
  if (!info) {
    *why = info.status().to_string();
    return nullptr;
  }
  return &*info;
}

#define AC_REQUIRE_GPU()                                                                   \
  std::string ac_gpu_why;                                                                 \
  const gpu::DeviceInfo* gpu = ::agentcompile::testing::gpu_or_skip_reason(&ac_gpu_why); \
  if (!gpu) GTEST_SKIP() << "no GPU: " << ac_gpu_why

// The engine tests' model: tests/fixtures/configs/small-qwen3.json with random f16 weights of `seed`,
// written to `dir`.
inline Status write_small_qwen3(const std::filesystem::path& dir, uint64_t seed) {
  auto config = frontend::read_hf_config(std::filesystem::path(AC_SOURCE_DIR) / "tests/fixtures/configs/small-qwen3.json");
  if (!config) return config.status();
  return frontend::write_random_checkpoint(*config, ir::DType::kF16, seed, dir, uint64_t{1} << 30);
}

inline ir::Module build_config_module(const std::string& config_name, ir::DType dtype) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/configs/" + config_name);
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  config->dtype = dtype;
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return std::move(module).value();
}

inline std::vector<codegen::CompileResult> compile_candidates(const std::vector<plan::Candidate>& candidates,
                                                              const std::string& arch) {
  std::vector<codegen::CompileJob> jobs;
  std::vector<size_t> job_of;
  for (const auto& c : candidates) {
    auto source = codegen::render_source(c);
    jobs.push_back({c.name(), source ? *source : std::string("#error ") + source.status().message()});
  }
  codegen::NvrtcOptions options;
  options.arch = arch;
  options.cache_dir = std::filesystem::path(AC_BINARY_DIR) / "test-nvrtc-cache";
  options.isolate = true;  // this process forks admission workers afterwards
  auto results = codegen::compile_all(jobs, options);
  EXPECT_TRUE(results.has_value()) << results.status().to_string();
  return results ? *results : std::vector<codegen::CompileResult>(candidates.size());
}

}  // namespace agentcompile::testing
