// Test tool: parses an IR text file with the C++ parser, verifies it and checks that printing and parsing
// again gives the same module. Prints "verified" and "roundtrip ok", or the first error; exit status 0
// only when both hold. Built by python/tests/helpers.py against the project's libac_ir/libac_support.
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/text.h"
#include "ir/verifier.h"

using namespace agentcompile::ir;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check_ir MODULE.ir\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  auto module = parse_module(text.str(), argv[1]);
  if (!module) {
    std::cout << module.status().message() << "\n";
    return 1;
  }
  if (auto status = verify_module(*module); !status.is_ok()) {
    std::cout << status.message() << "\n";
    return 1;
  }
  std::cout << "verified\n";
  auto again = parse_module(print_module(*module));
  const bool same = again && *again == *module;
  std::cout << (same ? "roundtrip ok" : "roundtrip FAIL") << "\n";
  return same ? 0 : 1;
}
