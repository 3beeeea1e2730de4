// Files for tests that run the CLI on directories: a fresh scratch directory per test, a file's bytes,
// and a snapshot of a whole tree to check that a command left it as it was.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace agentcompile::testing {

// A fresh directory AC_BINARY_DIR/SUITE/NAME-PID (ctest runs tests in parallel processes: the pid keeps
// them apart).
inline std::filesystem::path scratch_dir(const std::string& suite, const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(AC_BINARY_DIR) / suite / (name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every file (relative path -> bytes) and directory (relative path + "/" -> "") under `dir`; empty when
// `dir` does not exist.
inline std::map<std::string, std::string> tree_snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> entries;
  if (!std::filesystem::exists(dir)) return entries;
  for (const auto& item : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string rel = item.path().lexically_relative(dir).string();
    entries[item.is_directory() ? rel + "/" : rel] = item.is_directory() ? "" : file_bytes(item.path());
  }
  return entries;
}

}  // namespace agentcompile::testing
