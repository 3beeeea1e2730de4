// .npy and .safetensors logits files.
#include "runtime/logits_file.h"

#include <fstream>
#include <string>

#include "frontend/safetensors.h"

namespace agentcompile::runtime {

namespace {

Status write_npy(const std::filesystem::path& path, const std::vector<float>& logits, int64_t rows, int64_t vocab) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(vocab) + "), }";
  const size_t preamble = 10;  // magic (6) + version (2) + header length (2)
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return error(ErrorCode::kIo, path.string() + ": cannot open for writing");
  const char magic[] = {'\x93', 'N', 'U', 'M', 'P', 'Y', '\x01', '\x00'};
  out.write(magic, sizeof(magic));
  const uint16_t length = static_cast<uint16_t>(header.size());
  const char length_bytes[] = {static_cast<char>(length & 0xff), static_cast<char>(length >> 8)};
  out.write(length_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  if (!out) return error(ErrorCode::kIo, path.string() + ": write failed");
  return Status::ok();
}

}  // namespace

Status write_logits(const std::filesystem::path& path, const std::vector<float>& logits, int64_t rows, int64_t vocab) {
  if (static_cast<int64_t>(logits.size()) != rows * vocab) return error(ErrorCode::kInternal, "logits size does not match rows x vocab");
  if (path.extension() == ".safetensors")
    return frontend::write_safetensors(path, {{"logits", ir::DType::kF32, {rows, vocab}, logits.data()}}, {{"format", "agentcompile-logits"}});
  if (path.extension() != ".npy") return error(ErrorCode::kInvalidArgument, path.string() + ": logits are written as .npy or .safetensors");
  return write_npy(path, logits, rows, vocab);
}

}  // namespace agentcompile::runtime
