// The kernel template headers (src/kernels/*.cuh), embedded in the binary at build time.
#pragma once

#include <string>
#include <vector>

namespace agentcompile::codegen {

struct EmbeddedHeader {
  std::string name;  // "gemv.cuh"
  std::string text;
};

const std::vector<EmbeddedHeader>& embedded_kernel_headers();

}  // namespace agentcompile::codegen
