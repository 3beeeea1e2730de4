// Golden-file comparison for tests: compares text with tests/golden/<name>, or rewrites the file
// when AC_UPDATE_GOLDEN=1 is set in the environment.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace agentcompile::testing {

inline void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(AC_SOURCE_DIR) + "/tests/golden/" + name;
  const char* update = std::getenv("AC_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path << " (run with AC_UPDATE_GOLDEN=1 to create it)";
  std::stringstream expected;
  expected << in.rdbuf();
  if (expected.str() == actual) return;
  // Report the first differing line rather than two walls of text.
  std::istringstream a(expected.str()), b(actual);
  std::string la, lb;
  int line = 1;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) break;
    if (!more_a || !more_b || la != lb) {
      ADD_FAILURE() << path << ":" << line << " differs\n  golden: " << (more_a ? la : "<end>") << "\n  actual: "
                    << (more_b ? lb : "<end>") << "\n(AC_UPDATE_GOLDEN=1 rewrites the file after a deliberate change)";
      return;
    }
    ++line;
  }
}

}  // namespace agentcompile::testing
