// The compiler's public API: a model in, an artifact directory out (DESIGN.md, "compile").
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "agentcompile/status.h"

namespace agentcompile {

struct CompileOptions {
  std::filesystem::path model;        // HF checkpoint dir, config.json (shapes only) or .gguf
  std::filesystem::path output;       // artifact directory
  std::filesystem::path cache_dir;    // NVRTC cubins and artifacts; empty: ~/.cache/agentcompile
  std::string device_profile;         // "" : probe the GPU, else a named profile (h100, h200, a100)
  bool no_gpu = false;                // compile only: no admission or timing even if a GPU is present
  int max_candidates = 8;             // per region
  bool dump_ir = false;               // write the IR and region listings after each phase
  bool force = false;                 // recompile even when an up-to-date artifact exists
  int seeds = 3;                      // validation seeds (x 2 input distributions)
  int repetitions = 30;               // timed repetitions per candidate and bucket
};

struct CompileSummary {
  std::filesystem::path artifact;
  std::string key;
  bool warm = false;          // an up-to-date artifact was reused
  bool gpu_used = false;
  size_t ir_nodes = 0, regions = 0, unique_regions = 0, candidates = 0, compiled = 0, validated = 0, selected = 0;
  double seconds = 0;
  std::string table;          // the summary table the CLI prints
};

// Progress lines ("[3/6] generate: 88 candidates, NVRTC 12.1 s"), one per stage and step.
using ProgressFn = std::function<void(const std::string&)>;

Expected<CompileSummary> compile_model(const CompileOptions& options, const ProgressFn& progress = {});

}  // namespace agentcompile
