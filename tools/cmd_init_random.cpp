// `agentcompile init-random`: a randomly initialized Hugging Face checkpoint for a config.json, so
// compiled models can be run and compared against transformers without downloading weights.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "frontend/init_random.h"
#include "frontend/model_config.h"

namespace agentcompile::tools {

namespace {

struct InitRandomOptions {
  std::string config;
  std::string dtype = "bf16";
  uint64_t seed = 0;
  std::string out;
  uint64_t max_shard_mb = 2048;
  bool force = false;
};

void run_init_random(const InitRandomOptions& options) {
  const auto dtype = ir::parse_dtype(options.dtype);
  if (!dtype || !ir::is_float(*dtype)) fail("--dtype must be f16, bf16 or f32, got '" + options.dtype + "'");
  auto config = frontend::read_hf_config(options.config);
  if (!config) fail(config.status().to_string());

  const auto start = std::chrono::steady_clock::now();
  frontend::RandomCheckpointSummary summary;
  const Status status = frontend::write_random_checkpoint(*config, *dtype, options.seed, options.out,
                                                          options.max_shard_mb << 20, &summary, options.force);
  if (!status) fail(status.to_string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("wrote %s (%s, %s, seed %llu)\n", options.out.c_str(), config->model_type.c_str(),
              options.dtype.c_str(), static_cast<unsigned long long>(options.seed));
  for (const auto& file : summary.files) std::printf("  %s\n", file.filename().string().c_str());
  std::printf("parameters: %lld, tensor bytes: %llu (%.1f MiB), %.2f s\n", static_cast<long long>(summary.parameters),
              static_cast<unsigned long long>(summary.tensor_bytes), summary.tensor_bytes / 1048576.0, seconds);
}

}  // namespace

void add_init_random_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("init-random", "Write a randomly initialized HF checkpoint for a config.json");
  auto options = std::make_shared<InitRandomOptions>();
  cmd->add_option("--config", options->config, "Hugging Face config.json")->required()->check(CLI::ExistingFile);
  cmd->add_option("--dtype", options->dtype, "Weight dtype")->check(CLI::IsMember({"f16", "bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed; the same seed writes the same bytes")->capture_default_str();
  cmd->add_option("--out", options->out, "Output checkpoint directory (created if missing; one init-random wrote is replaced)")->required();
  cmd->add_flag("--force", options->force,
                "Write into a non-empty directory init-random did not write, replacing only the new checkpoint's files");
  cmd->add_option("--max-shard-mb", options->max_shard_mb, "Largest shard in MiB before splitting into shards")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))
      ->capture_default_str();
  cmd->callback([options] { run_init_random(*options); });
}

}  // namespace agentcompile::tools
