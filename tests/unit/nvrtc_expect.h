// Shared by the family tests: compile rendered kernels with NVRTC (into the tests' shared cache) and
// expect every one to compile, naming the arch, the kernel and NVRTC's log when one does not.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/nvrtc_compiler.h"

namespace agentcompile::testing {

inline void expect_nvrtc_compiles(const std::vector<codegen::CompileJob>& jobs, const std::string& arch) {
  codegen::NvrtcOptions options;
  options.arch = arch;
  options.cache_dir = std::filesystem::path(AC_BINARY_DIR) / "test-nvrtc-cache";
  auto results = codegen::compile_all(jobs, options);
  ASSERT_TRUE(results.has_value()) << results.status().to_string();
  for (const auto& result : *results) EXPECT_TRUE(result.ok) << arch << " " << result.kernel << ":\n" << result.log;
}

}  // namespace agentcompile::testing
