// `agentcompile compile MODEL -o OUT`: the whole compiler, with a progress line per stage and a
// summary table at the end.
#include <cstdio>

#include "agentcompile/compiler.h"
#include "commands.h"
#include "plan/device_profile.h"

namespace agentcompile::tools {

void add_compile_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("compile", "Compile a model into an artifact of selected, validated, measured kernels");
  auto options = std::make_shared<CompileOptions>();
  auto model = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto cache = std::make_shared<std::string>();
  cmd->add_option("model", *model, "HF checkpoint directory, a directory or file with only config.json, or a .gguf file")->required();
  cmd->add_option("-o,--output", *output, "Artifact directory")->required();
  cmd->add_option("--device-profile", options->device_profile,
                  "Compile for a named GPU (h100, h200, a100) without using one: compile only");
  cmd->add_flag("--no-gpu", options->no_gpu, "Do not validate or time even if a GPU is present");
  cmd->add_option("--max-candidates", options->max_candidates, "Candidates per region")->check(CLI::Range(1, 64));
  cmd->add_flag("--dump-ir", options->dump_ir, "Write the IR and the region listings into OUT/ir");
  cmd->add_flag("--force", options->force, "Recompile even when an up-to-date artifact exists");
  cmd->add_option("--cache-dir", *cache, "NVRTC and artifact cache (default ~/.cache/agentcompile)");
  cmd->add_option("--seeds", options->seeds, "Validation seeds (each with 2 input distributions)")->check(CLI::Range(1, 16));
  cmd->add_option("--repetitions", options->repetitions, "Timed repetitions per candidate")->check(CLI::Range(3, 1000));
  cmd->callback([options, model, output, cache] {
    options->model = *model;
    options->output = *output;
    options->cache_dir = *cache;
    auto summary = compile_model(*options, [](const std::string& line) {
      std::fprintf(stderr, "%s\n", line.c_str());
    });
    if (!summary) fail(summary.status().to_string());
    if (!summary->table.empty()) std::printf("\n%s", summary->table.c_str());
    std::printf("%s artifact %s in %.1f s: %zu unique regions, %zu candidates, %zu compiled, %s validated, %zu selections%s\n",
                summary->warm ? "warm:" : "compiled", summary->artifact.string().c_str(), summary->seconds, summary->unique_regions,
                summary->candidates, summary->compiled, summary->gpu_used ? std::to_string(summary->validated).c_str() : "none",
                summary->selected, summary->gpu_used ? "" : " (no GPU: unvalidated, unmeasured)");
  });
}

}  // namespace agentcompile::tools
