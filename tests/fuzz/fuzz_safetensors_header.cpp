// libFuzzer harness for the safetensors header parser: the input is a whole file. The parser must
// return an error or a header whose offsets all lie inside the input; ASan catches any read outside it.
// Seeds: tests/fuzz/corpus/safetensors/ (tiny files written by the Python safetensors package).
#include <cstdint>
#include <cstdlib>

#include "frontend/safetensors.h"

// Keeps the reads below from being optimized away.
static volatile uint64_t sink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto header = agentcompile::frontend::parse_safetensors_header(data, size, "fuzz.safetensors");
  if (!header.has_value()) return 0;
  // What the parser promised; a violation is a bug, so crash where the fuzzer sees it.
  uint64_t touched = 0;
  for (const auto& entry : header->tensors) {
    if (entry.begin > entry.end || header->data_start + entry.end > size) std::abort();
    for (uint64_t i = entry.begin; i < entry.end; ++i) touched += data[header->data_start + i];
  }
  sink = touched;
  return 0;
}
