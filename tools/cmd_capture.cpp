// `agentcompile capture hf|module ...`: captures a PyTorch model into a capture directory (docs/capture.md).
// The capture itself is Python (python/agentcompile/capture.py: torch.export where torch is); this command
// runs `python3 -m agentcompile.capture ARGS` with PYTHONPATH pointing at the source tree's python/
// directory, found above the executable (a build directory inside the checkout), and passes every argument
// through unchanged, --help included. $AGENTCOMPILE_PYTHON names another interpreter (a virtualenv's). The
// exit status is the tool's; the tool prints its own one-line errors, including what to install when torch
// or transformers is missing.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"

extern char** environ;

namespace agentcompile::tools {

namespace {

namespace fs = std::filesystem;

constexpr const char* kToolModule = "agentcompile.capture";
constexpr const char* kToolFile = "python/agentcompile/capture.py";

// The checkout's python/ directory: the nearest ancestor of the executable's directory that holds the tool.
fs::path find_python_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) fail("capture: cannot resolve /proc/self/exe to find the source tree: " + ec.message());
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(dir / kToolFile)) return dir / "python";
    if (dir == dir.root_path()) break;
  }
  fail(std::string("capture: the Python capture tool (") + kToolFile + ") is not in any directory above " +
       exe.parent_path().string() + "; run the agentcompile built inside a source checkout");
}

// The environment with PYTHONPATH = python_dir[:previous PYTHONPATH].
std::vector<std::string> child_environment(const fs::path& python_dir) {
  std::vector<std::string> env;
  std::string path = python_dir.string();
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string item = *entry;
    if (item.rfind("PYTHONPATH=", 0) == 0) {
      if (item.size() > std::strlen("PYTHONPATH=")) path += ":" + item.substr(std::strlen("PYTHONPATH="));
    } else {
      env.push_back(item);
    }
  }
  env.push_back("PYTHONPATH=" + path);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& items) {
  std::vector<char*> out;
  for (std::string& item : items) out.push_back(item.data());
  out.push_back(nullptr);
  return out;
}

int run_capture_tool(const std::vector<std::string>& args) {
  const char* override_python = std::getenv("AGENTCOMPILE_PYTHON");
  const std::string python = override_python != nullptr && *override_python ? override_python : "python3";
  std::vector<std::string> argv_items = {python, "-m", kToolModule};
  argv_items.insert(argv_items.end(), args.begin(), args.end());
  std::vector<std::string> env_items = child_environment(find_python_dir());
  std::vector<char*> argv = c_strings(argv_items);
  std::vector<char*> envp = c_strings(env_items);

  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), envp.data());
  if (spawned == ENOENT)
    fail("capture needs Python 3 with torch and transformers, and '" + python +
         "' was not found: install python3 (then `pip install torch transformers safetensors`), or set "
         "AGENTCOMPILE_PYTHON to an interpreter that has them");
  if (spawned != 0) fail("capture: cannot start '" + python + "': " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail(std::string("capture: waiting for the Python tool failed: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) fail("capture: the Python tool was killed by signal " + std::to_string(WTERMSIG(status)));
  return WEXITSTATUS(status);
}

}  // namespace

void add_capture_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("capture",
                                 "Capture a PyTorch model (hf | module) with torch.export; `capture --help` for more");
  cmd->prefix_command();   // everything after `capture` belongs to the Python tool
  cmd->set_help_flag();    // ... --help too: the tool's own help lists the real options
  cmd->callback([cmd] {
    const int status = run_capture_tool(cmd->remaining());
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace agentcompile::tools
