// The compiler's public API: a model in, an artifact directory out (DESIGN.md, "compile").
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile {

// The LLM advisor (DESIGN.md, "advise"; docs/advisor.md). Advice only orders and annotates the
// compiler's own candidates; selection stays by measured latency of validated candidates.
struct AdvisorOptions {
  std::string backend = "none";       // none | openai | anthropic | command:PROG | replay:FILE
  std::string url;                    // base URL; empty: https://api.openai.com/v1 or https://api.anthropic.com/v1
  std::string model;                  // required by openai and anthropic
  std::string key_env;                // environment variable with the API key; empty: OPENAI_API_KEY / ANTHROPIC_API_KEY
  std::string scope = "auto";         // auto: regions where semantics help; all: every region with candidates
  std::filesystem::path cache_dir;    // exchanges by request hash; empty: <cache_dir>/advice
  double connect_timeout_s = 10;      // per HTTP attempt
  double request_timeout_s = 60;      // per attempt (HTTP) or per run (command)
  int retries = 3;                    // further attempts after a 429, 5xx, timeout or broken transfer
  double budget_s = 600;              // wall-clock budget for all of a compile's advice
};

// Which candidates are measured, and the advisor ablation (DESIGN.md, "measure & select").
struct SearchOptions {
  int budget = 0;                     // measure the first K candidates in advisor order; 0: all
  bool ablate_advisor = false;        // measure every candidate once, then compare orderings on it
  std::vector<int> ablate_budgets = {1, 2, 4};
  uint64_t ablate_seed = 0;           // the random ordering's seed
};

struct CompileOptions {
  std::filesystem::path model;        // HF checkpoint dir, config.json (shapes only) or .gguf
  // Weight formats: "int8[:bf16]" or "int4[:gG][:zp][:bf16]" quantizes a checkpoint's linear weights
  // (round to nearest, frontend/weight_formats.h); "" keeps them as stored. A GGUF file's blocks run
  // in their own formats unless `dequantize` (today's f16 path).
  std::string quantize;
  // The LM head (the logits' projection) in a format of the same grammar; "" keeps it as stored. A head
  // tied to the embedding table is quantized as a copy of its own; the embedding keeps the table's dtype.
  std::string quantize_head;
  bool dequantize = false;
  std::filesystem::path output;       // artifact directory
  std::filesystem::path cache_dir;    // NVRTC cubins, artifacts and the tuning database; empty: ~/.cache/agentcompile
  std::string device_profile;         // "" : probe the GPU, else a named profile (h100, h200, a100)
  bool no_gpu = false;                // compile only: no admission or timing even if a GPU is present
  int max_candidates = 8;             // per region
  bool dump_ir = false;               // write the IR as captured and a listing after each stage into OUT/ir
  bool force = false;                 // recompile even when an up-to-date artifact exists
  int seeds = 3;                      // validation seeds (x 2 input distributions)
  int repetitions = 30;               // timed repetitions per candidate and bucket
  bool verbose = false;               // a progress line per advisor exchange, with its reply
  bool context_tuning = true;         // re-pick the decode layer's kernels timed as a chain of the layer (pipeline/context_tune.cpp)
  // A candidate whose fastest screening sample is this fraction slower than the best median so far
  // at a size stops timing there (tune::kEarlyStopMargin); 0: every validated candidate is timed in full.
  double early_stop_margin = 0.25;
  bool retune = false;                // measure again: the tuning database is not read (fresh results are still stored); implies force
  // Ablations (BENCHMARK.md): what the compiler may not do.
  bool unfused = false;               // no norm or attention prologues, matmul epilogues or horizontal matmul fusion
  bool library_matmuls = false;       // matmul regions run the cuBLAS fallback only (no generated GEMV/GEMM)
  // fp32 matmuls keep to fp32 arithmetic: no 3xTF32 candidate (TF32 tensor cores on split operands,
  // errors of fp32's order but not SGEMM's bit pattern); torch's default float32_matmul_precision "highest".
  bool no_tf32 = false;
  bool batch_decode = false;          // also compile decode_batch (ir/decode_batch.h): decode of 1..16 sequences per step
  // Tensor parallelism: compile the module of rank `rank` of `tensor_parallel` ranks (src/shard: per-rank
  // shapes, all_reduce / all_gather regions); 0 compiles the whole model.
  int tensor_parallel = 0;
  int rank = 0;
  AdvisorOptions advisor;
  SearchOptions search;
};

struct CompileSummary {
  std::filesystem::path artifact;
  std::string key;
  bool warm = false;          // an up-to-date artifact was reused
  bool gpu_used = false;
  size_t ir_nodes = 0, regions = 0, unique_regions = 0, candidates = 0, compiled = 0, validated = 0, selected = 0;
  double seconds = 0;
  std::string table;          // the summary table the CLI prints
  std::string advice;         // one paragraph on the advice outcomes (empty without an advisor)
  std::string ablation;       // the advisor ablation table (empty unless asked for)
};

// Progress lines ("[3/6] generate: 88 candidates, NVRTC 12.1 s"), one per stage and step.
using ProgressFn = std::function<void(const std::string&)>;

// Where admission stands, for a progress bar: candidates done of those to admit (each region's
// search budget; a region that must go on past it raises the total), how many came from the tuning
// database, and the time left at the pace of the candidates measured so far (negative: not known).
struct AdmissionProgress {
  size_t done = 0, total = 0, reused = 0;
  double elapsed_s = 0, eta_s = -1;
  std::string region;  // the region being admitted
};
using AdmissionProgressFn = std::function<void(const AdmissionProgress&)>;

// Where NVRTC cubins and artifacts are cached: `cache_dir` when given, else $XDG_CACHE_HOME/agentcompile,
// else ~/.cache/agentcompile.
std::filesystem::path cache_root(const std::filesystem::path& cache_dir);

Expected<CompileSummary> compile_model(const CompileOptions& options, const ProgressFn& progress = {},
                                       const AdmissionProgressFn& admission_progress = {});

}  // namespace agentcompile
