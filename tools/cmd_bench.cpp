// `agentcompile bench MODEL --workload i128/o128`: the latency of one request, as BENCHMARK.md
// defines it: a random prompt of I tokens, O tokens generated greedily with no early stop; warm-ups
// first, then repetitions; the median prefill ms, decode ms/token and total ms. Prefill and decode are
// timed with CUDA events; the total is the host's wall time of the whole request (which includes
// them). --json prints one object with the GPU and the commit. Also the weight bytes one decode step
// reads in the model's formats, the device-to-device copy bandwidth measured before the engine
// loads, and the weights' floor (bytes / bandwidth) the decode time is measured against. With
// --tensor-parallel N > 1 every rank runs each request (tensor_parallel_run.h): the bytes are one rank's
// shard, and the floor adds the decode step's all-reduces at the time each took when the engines loaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "analysis/weight_traffic.h"
#include "commands.h"
#include "engine_flags.h"
#include "git_commit.h"
#include "gpu/device_probe.h"
#include "tensor_parallel_run.h"

namespace agentcompile::tools {

namespace {

struct BenchFlags {
  EngineFlags engine;
  std::string workload = "i128/o128";
  int reps = 10, warmup = 2;
  bool json = false;
  uint64_t seed = 0;
};

struct Workload {
  int64_t input = 0, output = 0;
};

Workload parse_workload(const std::string& text) {
  Workload w;
  long long i = 0, o = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "i%lld/o%lld%c", &i, &o, &tail) != 2 || i < 1 || o < 1)
    fail("--workload '" + text + "': expected iINPUT/oOUTPUT, e.g. i128/o128");
  w.input = i;
  w.output = o;
  return w;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void bench(BenchFlags flags) {
  const Workload w = parse_workload(flags.workload);
  if (flags.engine.max_context == 0) flags.engine.max_context = w.input + w.output;
  // Measured in a forked child before this process starts CUDA (gpu/device_probe.h); 0 if it fails.
  const Expected<double> copy = gpu::measure_copy_bandwidth_gbs();
  const double copy_gbs = copy ? *copy : 0;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<RankEngines> ranks;
  if (flags.engine.tensor_parallel > 1)
    ranks = RankEngines::load_or_fail(flags.engine, flags.json);
  else
    engine = load_engine_or_fail(flags.engine, flags.json);
  const EngineInfo& info = ranks ? ranks->info() : engine->info();
  const std::string gpu = ranks ? ranks->gpu() : info.gpu;
  auto generate = [&](const std::vector<int32_t>& prompt, const GenerateOptions& options) {
    if (ranks) return ranks->generate_or_fail(prompt, options);
    auto result = engine->generate(prompt, options);
    if (!result) fail(result.status().to_string());
    return std::move(*result);
  };

  std::mt19937_64 rng(flags.seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(info.vocab_size - 1));
  std::vector<int32_t> prompt(static_cast<size_t>(w.input));
  for (auto& id : prompt) id = pick(rng);
  GenerateOptions options;
  options.max_new_tokens = w.output;
  options.stop_at_eos = false;

  nlohmann::json samples = nlohmann::json::array();
  std::vector<double> prefill, decode, total;
  for (int r = 0; r < flags.warmup + flags.reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const GenerateResult result = generate(prompt, options);
    const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (static_cast<int64_t>(result.tokens.size()) != w.output) fail("generated " + std::to_string(result.tokens.size()) + " tokens, not " + std::to_string(w.output));
    if (r < flags.warmup) continue;
    const double per_token = result.decode_steps > 0 ? result.decode_ms / static_cast<double>(result.decode_steps) : 0;
    prefill.push_back(result.prefill_ms);
    decode.push_back(per_token);
    total.push_back(wall_ms);
    samples.push_back({{"prefill_ms", result.prefill_ms}, {"decode_ms", result.decode_ms}, {"decode_ms_per_token", per_token}, {"total_ms", wall_ms}});
  }
  nlohmann::json out{{"system", "agentcompile"}, {"workload", flags.workload}, {"input_tokens", w.input}, {"output_tokens", w.output},
                     {"prefill_ms", median(prefill)}, {"decode_ms_per_token", median(decode)}, {"total_ms", median(total)},
                     {"reps", flags.reps}, {"warmup", flags.warmup}, {"samples", samples}, {"gpu", gpu}, {"commit", AC_GIT_COMMIT},
                     {"dtype", info.dtype}, {"model_type", info.model_type}, {"cuda_graph", info.cuda_graph}, {"programmatic_launch", info.programmatic_launch}, {"max_context", info.max_context},
                     {"decode_launches_per_step", info.decode_launches}, {"artifact", info.artifact}, {"weight_bytes", info.weight_bytes},
                     {"weight_formats", info.weight_formats}, {"weight_bytes_read_per_token", info.decode_weight_bytes},
                     {"copy_bandwidth_gb_s", copy_gbs}};
  const double floor = analysis::floor_ms(static_cast<double>(info.decode_weight_bytes), copy_gbs);
  if (floor > 0) {
    out["weight_floor_ms"] = floor;
    out["decode_over_weight_floor"] = median(decode) / floor;
  }
  // Tensor parallelism: the all-reduces one decode step makes, at the time one took on the transport
  // the engines chose (timed when they loaded), added to the floor.
  const double all_reduce_ms = static_cast<double>(info.decode_all_reduces) * info.all_reduce_us / 1000.0;
  if (ranks) {
    out["tensor_parallel"] = ranks->ranks();
    out["all_reduce"] = info.all_reduce;
    out["all_reduce_us"] = info.all_reduce_us;
    out["decode_all_reduces"] = info.decode_all_reduces;
    out["all_reduce_ms_per_token"] = all_reduce_ms;
    if (floor > 0) {
      out["floor_with_all_reduces_ms"] = floor + all_reduce_ms;
      out["decode_over_floor_with_all_reduces"] = median(decode) / (floor + all_reduce_ms);
    }
  }
  if (flags.json) {
    std::printf("%s\n", out.dump().c_str());
    return;
  }
  std::printf("%s %s on %s, %s (commit %s)\n", info.model_type.c_str(), info.dtype.c_str(), gpu.c_str(), flags.workload.c_str(), AC_GIT_COMMIT);
  std::printf("  prefill   %10.2f ms\n  decode    %10.3f ms/token (%zu launches per step%s)\n  total     %10.1f ms   (median of %d, after %d warm-ups)\n",
              median(prefill), median(decode), info.decode_launches, info.cuda_graph ? ", CUDA graph" : "", median(total), flags.reps, flags.warmup);
  std::printf("  weights   %10.2f MB read per token (%s)", static_cast<double>(info.decode_weight_bytes) / 1e6, info.weight_formats.c_str());
  if (floor > 0)
    std::printf(": floor %.3f ms/token at %.0f GB/s copy bandwidth, decode at %.2fx the floor", floor, copy_gbs, median(decode) / floor);
  std::printf("\n");
  if (ranks) {
    std::printf("  ranks     %10d, weights above are one rank's; %lld all-reduces per step over %s at %.1f us each (%.3f ms/token)",
                ranks->ranks(), static_cast<long long>(info.decode_all_reduces), info.all_reduce.c_str(), info.all_reduce_us, all_reduce_ms);
    if (floor > 0) std::printf(": floor with them %.3f ms/token, decode at %.2fx", floor + all_reduce_ms, median(decode) / (floor + all_reduce_ms));
    std::printf("\n");
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time one request (prefill + greedy decode) as BENCHMARK.md defines it");
  auto flags = std::make_shared<BenchFlags>();
  add_engine_flags(*cmd, flags->engine);
  cmd->add_option("--workload", flags->workload, "iINPUT/oOUTPUT tokens, e.g. i128/o128");
  cmd->add_option("--reps", flags->reps, "Timed repetitions")->check(CLI::Range(1, 1000));
  cmd->add_option("--warmup", flags->warmup, "Untimed warm-up runs")->check(CLI::Range(0, 100));
  cmd->add_option("--seed", flags->seed, "Seed of the random prompt");
  cmd->add_flag("--json", flags->json, "Print one JSON object");
  cmd->callback([flags] { bench(*flags); });
}

}  // namespace agentcompile::tools
