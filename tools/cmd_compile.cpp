// `agentcompile compile MODEL -o OUT`: the whole compiler, with a progress line per stage and a
// summary table at the end (and the advice outcomes and the advisor ablation when asked for).
#include <unistd.h>

#include <cstdio>

#include "agentcompile/compiler.h"
#include "commands.h"
#include "progress_bar.h"
#include "plan/device_profile.h"

namespace agentcompile::tools {

namespace {

void add_advisor_options(CLI::App* cmd, CompileOptions* options, std::string* advice_cache) {
  AdvisorOptions& a = options->advisor;
  cmd->add_option("--advisor", a.backend,
                  "LLM advisor: none (default), openai, anthropic, command:PROG (prompt on stdin, JSON on stdout), "
                  "replay:FILE (an artifact's advice.json or its directory)");
  cmd->add_option("--advisor-url", a.url, "Base URL (OpenAI-compatible: OpenAI, vLLM, llama.cpp server, Ollama; or Anthropic)");
  cmd->add_option("--advisor-model", a.model, "Model name (openai and anthropic)");
  cmd->add_option("--advisor-key-env", a.key_env,
                  "Environment variable holding the API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY); keys are never written anywhere");
  cmd->add_option("--advisor-scope", a.scope, "auto: ask where semantics help (mixed regions, complex epilogues, reduction-pointwise); all: every region")
      ->check(CLI::IsMember({"auto", "all"}));
  cmd->add_option("--advisor-cache", *advice_cache, "Advice cache directory (default CACHE_DIR/advice)");
  cmd->add_option("--advisor-timeout", a.request_timeout_s, "Seconds per advisor request attempt (or command run)")->check(CLI::PositiveNumber);
  cmd->add_option("--advisor-connect-timeout", a.connect_timeout_s, "Seconds to connect to the advisor server")->check(CLI::PositiveNumber);
  cmd->add_option("--advisor-retries", a.retries, "Further attempts after a 429, 5xx, timeout or broken transfer")->check(CLI::Range(0, 10));
  cmd->add_option("--advisor-budget", a.budget_s, "Seconds all of a compile's advice may take")->check(CLI::NonNegativeNumber);
  SearchOptions& s = options->search;
  cmd->add_option("--search-budget", s.budget,
                  "Measure only the first K candidates per region in advisor order (more if none validates); 0: all")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--ablate-advisor", s.ablate_advisor,
                "Measure every candidate once, then compare heuristic, advisor, random and exhaustive orderings on it (ablation.json)");
  cmd->add_option("--ablate-budgets", s.ablate_budgets, "Budgets the ablation evaluates, e.g. 1,2,4")->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--ablate-seed", s.ablate_seed, "Seed of the ablation's random ordering");
}

}  // namespace

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model into an artifact of selected, validated, measured kernels");
  auto options = std::make_shared<CompileOptions>();
  auto model = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto cache = std::make_shared<std::string>();
  auto advice_cache = std::make_shared<std::string>();
  cmd->add_option("model", *model, "HF checkpoint directory, a directory or file with only config.json, or a .gguf file")->required();
  cmd->add_option("-o,--output", *output, "Artifact directory")->required();
  cmd->add_option("--device-profile", options->device_profile,
                  "Compile for a named GPU (h100, h200, a100) without using one: compile only");
  cmd->add_flag("--no-gpu", options->no_gpu, "Do not validate or time even if a GPU is present");
  cmd->add_flag("--no-context-tuning", [options](int64_t) { options->context_tuning = false; },
                "Keep the decode layer's picks made with each kernel timed alone (no timing of the layer as a chain)");
  cmd->add_option("--max-candidates", options->max_candidates, "Candidates per region")->check(CLI::Range(1, 64));
  cmd->add_flag("--dump-ir", options->dump_ir, "Write the IR as captured and a listing after each stage into OUT/ir");
  cmd->add_flag("--force", options->force, "Recompile even when an up-to-date artifact exists");
  cmd->add_option("--cache-dir", *cache, "NVRTC, artifact and tuning database cache (default ~/.cache/agentcompile)");
  cmd->add_option("--seeds", options->seeds, "Validation seeds (each with 2 input distributions)")->check(CLI::Range(1, 16));
  cmd->add_option("--repetitions", options->repetitions, "Timed repetitions per candidate")->check(CLI::Range(3, 1000));
  cmd->add_option("--early-stop-margin", options->early_stop_margin,
                  "Stop timing a candidate whose fastest screening sample is this fraction slower than the best so far (0: time all in full)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_flag("--retune", options->retune,
                "Measure every candidate again: do not read the tuning database (CACHE_DIR/tuning; fresh results are stored); implies --force");
  cmd->add_flag("--unfused", options->unfused, "No norm or attention prologues, matmul epilogues or horizontal matmul fusion (ablation)");
  cmd->add_flag("--cublas-matmuls", options->library_matmuls, "Matmul regions use the cuBLAS fallback only (ablation)");
  cmd->add_flag("--no-tf32", options->no_tf32,
                "fp32 matmuls keep to fp32 arithmetic: no 3xTF32 candidate (split operands on TF32 tensor cores, fp32-level error)");
  cmd->add_flag("--batch-decode", options->batch_decode,
                "Also compile decode_batch, decode of 1..16 sequences per step (batch buckets b1, b2, b3-4, b5-8, b9-16)");
  cmd->add_option("--quantize", options->quantize,
                  "Quantize a checkpoint's linear weights to nearest: int8[:bf16] (per output channel) or int4[:g32|:g64|:g128][:zp][:bf16] "
                  "(groups along K, default g128; zp: zero points; bf16: bf16 scales); the logits' projection keeps its dtype");
  cmd->add_option("--quantize-head", options->quantize_head,
                  "Quantize the LM head (the logits' projection) too, in the grammar of --quantize (e.g. int8); a head tied to the "
                  "embedding table gets a quantized copy of its own");
  cmd->add_flag("--dequantize", options->dequantize, "GGUF: dequantize the file's blocks to the model's float type at load (f16 path; with --quantize: then quantized again)");
  cmd->add_option("--tensor-parallel", options->tensor_parallel,
                  "Compile the N rank modules of tensor parallelism (Megatron sharding), one artifact per rank in OUTPUT/rank<r>")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("-v,--verbose", options->verbose, "A progress line per advisor exchange, with the reply and every rejection");
  add_advisor_options(cmd, options.get(), advice_cache.get());
  cmd->callback([options, model, output, cache, advice_cache] {
    options->model = *model;
    options->output = *output;
    options->cache_dir = *cache;
    options->advisor.cache_dir = *advice_cache;
    ProgressPrinter printer(isatty(STDERR_FILENO) != 0);
    // One compile per rank (each rank's shapes, kernels and artifact are its own; the ranks' regions
    // share signatures, so the tuning database makes every rank after the first mostly a replay).
    const int ranks = std::max(options->tensor_parallel, 1);
    for (int rank = 0; rank < ranks; ++rank) {
      CompileOptions rank_options = *options;
      rank_options.rank = rank;
      if (options->tensor_parallel > 0) rank_options.output = std::filesystem::path(*output) / ("rank" + std::to_string(rank));
      auto summary = compile_model(
          rank_options, [&](const std::string& line) { printer.line(line); },
          [&](const AdmissionProgress& progress) { printer.admission(progress); });
      if (!summary) fail(summary.status().to_string());
      if (!summary->table.empty()) std::printf("\n%s", summary->table.c_str());
      if (!summary->advice.empty()) std::printf("\n%s\n", summary->advice.c_str());
      if (!summary->ablation.empty()) std::printf("\n%s", summary->ablation.c_str());
      std::printf("%s artifact %s in %.1f s: %zu unique regions, %zu candidates, %zu compiled, %s validated, %zu selections%s\n",
                  summary->warm ? "warm:" : "compiled", summary->artifact.string().c_str(), summary->seconds, summary->unique_regions,
                  summary->candidates, summary->compiled, summary->gpu_used ? std::to_string(summary->validated).c_str() : "none",
                  summary->selected, summary->gpu_used ? "" : " (no GPU: unvalidated, unmeasured)");
    }
  });
}

}  // namespace agentcompile::tools
