// The byte ranges that the tensors of one checkpoint file claim must be disjoint (safetensors and GGUF
// alike): the runtime uploads each tensor's bytes as they are, so two tensors sharing bytes would each
// read the other's values and the model would answer wrongly without any error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::frontend {

struct TensorRange {
  const std::string* name;
  uint64_t begin = 0;  // offsets into the file's data section, begin <= end
  uint64_t end = 0;
};

// kParse naming `source` and the first two tensors found sharing bytes:
// "tensors 'a' [0, 64) and 'b' [32, 96) overlap". Empty ranges own no bytes.
Status check_disjoint(const std::string& source, std::vector<TensorRange> ranges);

}  // namespace agentcompile::frontend
