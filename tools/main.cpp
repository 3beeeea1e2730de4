// agentcompile: the command-line entry point.
#include <cstdio>
#include <string>

#include "commands.h"
#include "git_commit.h"  // AC_GIT_COMMIT: the commit the binary was built from (build/generated)

namespace agentcompile::tools {

void fail(const std::string& message) {
  std::fprintf(stderr, "agentcompile: %s\n", message.c_str());
  throw CLI::RuntimeError(1);
}

}  // namespace agentcompile::tools

int main(int argc, char** argv) {
  CLI::App app{"agentcompile: an LLM-guided compiler and runtime for transformer inference on NVIDIA GPUs"};
  app.require_subcommand(1);
  // Results name the code that produced them: bench/kernelbench.py records this, not the checkout it runs in.
  app.set_version_flag("--version", std::string("agentcompile ") + AC_GIT_COMMIT);
  agentcompile::tools::add_inspect_command(app);
  agentcompile::tools::add_init_random_command(app);
  agentcompile::tools::add_reference_command(app);
  agentcompile::tools::add_perplexity_command(app);
  agentcompile::tools::add_compile_command(app);
  agentcompile::tools::add_run_command(app);
  agentcompile::tools::add_bench_command(app);
  agentcompile::tools::add_tokenize_command(app);
  agentcompile::tools::add_run_function_command(app);
  agentcompile::tools::add_capture_command(app);
  agentcompile::tools::add_serve_command(app);
  // CLI11 would call a misspelt subcommand a missing one ("A subcommand is required").
  if (argc > 1 && argv[1][0] != '-') {
    std::string valid;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      valid += (valid.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->get_name() == argv[1];
    }
    if (!known) {
      std::fprintf(stderr, "agentcompile: unknown subcommand '%s' (valid: %s); see --help\n", argv[1], valid.c_str());
      return 1;
    }
  }
  CLI11_PARSE(app, argc, argv);
  return 0;
}
