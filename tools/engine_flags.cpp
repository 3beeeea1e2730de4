// Engine flags and loading for the GPU subcommands.
#include "engine_flags.h"

#include <cstdio>

#include "agentcompile/first_use.h"
#include "commands.h"

namespace agentcompile::tools {

void add_engine_flags(CLI::App& cmd, EngineFlags& flags) {
  cmd.add_option("model", flags.model, "HF checkpoint directory, .gguf file or capture directory")->required();
  cmd.add_option("--artifact", flags.artifact, "Compiled artifact to run (default: the model's cached artifact, compiled on first use)");
  cmd.add_option("--cache-dir", flags.cache_dir, "Artifact and NVRTC cache (default ~/.cache/agentcompile)");
  cmd.add_option("--max-context", flags.max_context, "KV-cache rows (default: the model's maximum, or what memory allows)")->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd.add_option("--prefill-chunk", flags.prefill_chunk, "Longest prefill call; longer prompts run in chunks (default min(context, 8192))")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd.add_flag("--no-cuda-graph", flags.no_cuda_graph, "Issue the decode step's launches one by one instead of replaying a CUDA graph");
  cmd.add_flag("--no-pdl", flags.no_pdl, "Launch decode kernels without programmatic dependent launch (ablation)");
  cmd.add_flag("--unfused", flags.unfused, "Compile without norm or attention prologues, matmul epilogues or horizontal matmul fusion (ablation)");
  cmd.add_flag("--cublas-matmuls", flags.cublas_matmuls, "Compile every matmul region to its cuBLAS fallback, no generated GEMV or GEMM (ablation)");
  cmd.add_flag("--no-tf32", flags.no_tf32, "Compile fp32 matmuls without the 3xTF32 candidate (as `compile --no-tf32`)");
  cmd.add_flag("--batch-decode", flags.batch_decode,
               "Use the artifact that also holds decode_batch (compile --batch-decode; compiled on first use); serve --max-concurrency N > 1 implies it");
  cmd.add_option("--quantize", flags.quantize,
                 "Run the checkpoint with its linear weights quantized (as `compile --quantize`): int8[:bf16] or int4[:gG][:zp][:bf16]");
  cmd.add_option("--quantize-head", flags.quantize_head, "Run the LM head quantized too (as `compile --quantize-head`), e.g. int8");
  cmd.add_flag("--dequantize", flags.dequantize, "GGUF: run the f16 path, the file's blocks dequantized at load (with --quantize: then quantized again)");
  cmd.add_option("--max-candidates", flags.max_candidates, "Candidates per region when compiling on first use")->check(CLI::Range(1, 64));
  cmd.add_option("--tensor-parallel", flags.tensor_parallel,
                 "Split the model over N GPUs (Megatron sharding, NCCL all-reduce; one thread per GPU); 1 runs the same path on one GPU. "
                 "With --artifact DIR, rank r runs DIR/rank<r> (compile --tensor-parallel N -o DIR)")
      ->check(CLI::Range(1, 64));
}

EngineOptions engine_options(const EngineFlags& flags) {
  EngineOptions options;
  options.model = flags.model;
  options.artifact = flags.artifact;
  options.cache_dir = flags.cache_dir;
  options.max_context = flags.max_context;
  options.prefill_chunk = flags.prefill_chunk;
  options.cuda_graph = !flags.no_cuda_graph;
  options.programmatic_launch = !flags.no_pdl;
  options.compile.max_candidates = flags.max_candidates;
  options.compile.unfused = flags.unfused;
  options.compile.library_matmuls = flags.cublas_matmuls;
  options.compile.no_tf32 = flags.no_tf32;
  options.compile.batch_decode = flags.batch_decode;
  options.compile.quantize = flags.quantize;
  options.compile.quantize_head = flags.quantize_head;
  options.compile.dequantize = flags.dequantize;
  options.compile.tensor_parallel = flags.tensor_parallel;
  if (flags.tensor_parallel >= 1 && !flags.artifact.empty()) options.artifact = std::filesystem::path(flags.artifact) / "rank0";
  return options;
}

std::unique_ptr<Engine> load_engine_or_fail(const EngineFlags& flags, bool quiet) {
  if (flags.tensor_parallel > 1) fail("--tensor-parallel " + std::to_string(flags.tensor_parallel) + ": only `run` and `bench` run several ranks so far");
  auto engine = load_engine(engine_options(flags), [quiet](const std::string& line) {
    if (!quiet) std::fprintf(stderr, "%s\n", line.c_str());
  });
  if (!engine) fail(engine.status().to_string());
  const EngineInfo& info = (*engine)->info();
  if (!quiet)
    std::fprintf(stderr, "engine: %s %s on %s, artifact %s, %zu launches per decode step (%s, %s)\n", info.model_type.c_str(), info.dtype.c_str(),
                 info.gpu.c_str(), info.artifact.c_str(), info.decode_launches, info.cuda_graph ? "CUDA graph" : "no CUDA graph",
                 info.programmatic_launch ? "programmatic dependent launch" : "plain launches");
  return std::move(*engine);
}

}  // namespace agentcompile::tools
