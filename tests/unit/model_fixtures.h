// IR modules built from the model configurations the tests use: the real ones in configs/ and the
// tiny ones in tests/fixtures/configs/.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "frontend/model_builder.h"
#include "ir/graph.h"

namespace agentcompile::fixtures {

// The module of `path`, relative to the source tree (a failure to read or build it fails the test).
inline ir::Module module_from_config(const std::string& path) {
  auto config = frontend::read_hf_config(std::string(AC_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(config.has_value()) << config.status().to_string();
  auto module = frontend::build_module(*config);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  return std::move(module).value();
}

inline ir::Module tiny_model(const std::string& name) { return module_from_config("tests/fixtures/configs/" + name); }

}  // namespace agentcompile::fixtures
