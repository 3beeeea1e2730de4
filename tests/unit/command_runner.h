// Running a command from a test (usually the agentcompile CLI): its status, stdout and stderr
// together, and how long it took.
#pragma once

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace agentcompile::testing {

struct CommandRun {
  int status = -1;     // as pclose returns it; 0 on success
  int exit_code = -1;  // the exit code, or -1 when the command did not exit normally
  std::string output;  // stdout and stderr together
  double seconds = 0;
};

inline CommandRun run_command(const std::string& command) {
  CommandRun run;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return run;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.output.append(buffer, n);
  run.status = pclose(pipe);
  run.exit_code = WIFEXITED(run.status) ? WEXITSTATUS(run.status) : -1;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

#ifdef AC_CLI
// The agentcompile binary this build made, with `args`.
inline CommandRun run_cli(const std::string& args) { return run_command(std::string(AC_CLI) + " " + args); }
#endif

}  // namespace agentcompile::testing
