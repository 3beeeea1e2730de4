// agentcompile: the command-line entry point.
#include <cstdio>

#include "commands.h"

namespace agentcompile::tools {

void fail(const std::string& message) {
  std::fprintf(stderr, "agentcompile: %s\n", message.c_str());
  throw CLI::RuntimeError(1);
}

}  // namespace agentcompile::tools

int main(int argc, char** argv) {
  CLI::App app{"agentcompile: an LLM-guided compiler and runtime for transformer inference on NVIDIA GPUs"};
  app.require_subcommand(1);
  agentcompile::tools::add_inspect_command(app);
  agentcompile::tools::add_init_random_command(app);
  agentcompile::tools::add_reference_command(app);
  agentcompile::tools::add_compile_command(app);
  agentcompile::tools::add_run_command(app);
  agentcompile::tools::add_bench_command(app);
  agentcompile::tools::add_tokenize_command(app);
  agentcompile::tools::add_run_function_command(app);
  agentcompile::tools::add_capture_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
