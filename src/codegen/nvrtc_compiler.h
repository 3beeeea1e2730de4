// Compiling candidate sources to cubins with NVRTC: in parallel, with a timeout-free bounded pool,
// into a content-addressed cache keyed by SHA-256 of (source, kernel headers, arch, NVRTC version,
// options). A second compile of the same candidate is a cache read.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::codegen {

struct NvrtcOptions {
  std::string arch = "sm_90a";             // --gpu-architecture
  std::filesystem::path cache_dir;         // empty: no cache
  std::filesystem::path cuda_include_dir;  // empty: found automatically (see cuda_include_dir())
  int threads = 0;                         // 0: hardware concurrency
  std::vector<std::string> extra_options;  // e.g. -lineinfo
  // NVRTC loads the CUDA driver and calls cuInit, after which a forked child can no longer use
  // CUDA. A process that forks GPU workers later (the compiler) compiles in a forked child instead.
  bool isolate = false;
};

struct CompileJob {
  std::string kernel;  // the extern "C" kernel symbol
  std::string source;
};

struct CompileResult {
  std::string kernel;
  bool ok = false;
  bool cache_hit = false;
  std::string key;          // SHA-256 of the compile inputs
  std::string log;          // NVRTC's log (errors and warnings)
  std::vector<char> cubin;
  double seconds = 0;
};

// Version string of the NVRTC library ("13.0").
std::string nvrtc_version();
// Where cuda_fp16.h lives: the toolkit this binary was built against, else $CUDA_HOME/include, else
// /usr/local/cuda/include. Error when none holds it.
Expected<std::filesystem::path> cuda_include_dir();

// Compiles every job; a failed compile is a result with ok=false and the log, never an error. The
// call fails only when NVRTC itself cannot run (no CUDA headers).
Expected<std::vector<CompileResult>> compile_all(const std::vector<CompileJob>& jobs, const NvrtcOptions& options);

}  // namespace agentcompile::codegen
