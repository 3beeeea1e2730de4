// The agentcompile CLI: one file per subcommand, each registering itself on the root app.
// A subcommand reports failure by throwing CLI::RuntimeError with a nonzero exit code after
// printing the error; library calls below it return Status and never print.
#pragma once

#include <CLI/CLI.hpp>

namespace agentcompile::tools {

void add_inspect_command(CLI::App& app);
void add_init_random_command(CLI::App& app);
void add_reference_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_compile_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_run_function_command(CLI::App& app);
void add_capture_command(CLI::App& app);
void add_serve_command(CLI::App& app);

// Prints "agentcompile: <message>" to stderr and throws CLI::RuntimeError(1).
[[noreturn]] void fail(const std::string& message);

}  // namespace agentcompile::tools
