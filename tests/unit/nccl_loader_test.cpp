// NCCL is loaded at run time (gpu/nccl.h): where it is looked for, in order, and that a library found
// there answers with an NCCL 2 version. Needs no GPU: loading and ncclGetVersion touch no device.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpu/nccl.h"

namespace agentcompile {
namespace {

TEST(NcclLoader, LooksAtTheEnvironmentFirstThenTheLoaderPath) {
  setenv("AGENTCOMPILE_NCCL", "/nonexistent/nccl", 1);
  const std::vector<std::string> paths = gpu::nccl_search_paths();
  unsetenv("AGENTCOMPILE_NCCL");
  ASSERT_GE(paths.size(), 2u);
  EXPECT_EQ(paths[0], "/nonexistent/nccl");  // not a folder: taken as the library file itself
  EXPECT_EQ(paths[1], "libnccl.so.2");
  for (size_t i = 2; i < paths.size(); ++i) EXPECT_NE(paths[i].find("/lib/libnccl.so.2"), std::string::npos) << paths[i];
}

TEST(NcclLoader, AFolderInTheEnvironmentNamesTheLibraryInIt) {
  setenv("AGENTCOMPILE_NCCL", "/tmp", 1);
  const std::vector<std::string> paths = gpu::nccl_search_paths();
  unsetenv("AGENTCOMPILE_NCCL");
  EXPECT_EQ(paths.at(0), "/tmp/libnccl.so.2");
}

TEST(NcclLoader, LoadsAnNccl2OrNamesWhereItLooked) {
  auto library = gpu::load_nccl();
  if (!library) {
    // No NCCL on this machine: the error must say where it looked and how to point at one.
    EXPECT_NE(library.status().message().find("libnccl.so.2"), std::string::npos) << library.status().message();
    EXPECT_NE(library.status().message().find("AGENTCOMPILE_NCCL"), std::string::npos) << library.status().message();
    GTEST_SKIP() << library.status().message();
  }
  EXPECT_GE(library->version, 20000) << library->path;  // NCCL_VERSION_CODE of 2.x.y is 2xxyy
  EXPECT_FALSE(library->path.empty());
}

}  // namespace
}  // namespace agentcompile
