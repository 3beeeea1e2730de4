// Writing a [rows, vocab] float32 logits matrix for comparison with a reference: NumPy .npy (v1.0,
// little-endian '<f4', C order) or, for a .safetensors path, one tensor named "logits".
#pragma once

#include <filesystem>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::runtime {

Status write_logits(const std::filesystem::path& path, const std::vector<float>& logits, int64_t rows, int64_t vocab);

}  // namespace agentcompile::runtime
