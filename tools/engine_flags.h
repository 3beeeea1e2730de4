// Flags shared by the subcommands that run a model on the GPU (run, bench): which model and
// artifact, how much context, CUDA graphs, and the compile settings used on first use.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "agentcompile/engine.h"

namespace agentcompile::tools {

struct EngineFlags {
  std::string model, artifact, cache_dir;
  int64_t max_context = 0, prefill_chunk = 0;
  bool no_cuda_graph = false, no_pdl = false;
  bool unfused = false, cublas_matmuls = false, no_tf32 = false;  // compile ablations (a separate cached artifact each)
  bool batch_decode = false;                      // the artifact also holds decode_batch (compile --batch-decode)
  std::string quantize;                          // weight formats (CompileOptions::quantize); the engine runs the same module
  std::string quantize_head;                     // CompileOptions::quantize_head
  bool dequantize = false;
  int max_candidates = 8;
  int tensor_parallel = 0;                       // ranks (0: the whole model on one GPU; 1: the tensor-parallel path on one GPU)
};

void add_engine_flags(CLI::App& cmd, EngineFlags& flags);
EngineOptions engine_options(const EngineFlags& flags);
// Loads the engine with progress on stderr; fails the command with the error otherwise.
std::unique_ptr<Engine> load_engine_or_fail(const EngineFlags& flags, bool quiet = false);

}  // namespace agentcompile::tools
