// Hugging Face safetensors: header parsing, read-only mmap of one file, a WeightStore over a checkpoint
// directory (single file or sharded through model.safetensors.index.json), and a writer.
//
// Layout of a file: u64 little-endian N | N bytes of JSON | data section. The JSON maps each tensor name
// to {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]} (offsets relative to the data section)
// and may hold "__metadata__", a string-to-string map. Every byte of the header is untrusted: the parser
// checks all of it before any offset is used, and it is fuzzed (tests/fuzz/fuzz_safetensors_header.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "agentcompile/status.h"
#include "frontend/weights.h"
#include "ir/dtype.h"
#include "support/mapped_file.h"

namespace agentcompile::frontend {

struct SafetensorsEntry {
  std::string name;
  ir::DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section, begin <= end
  uint64_t end = 0;
  uint64_t elements = 0;
};

struct SafetensorsHeader {
  uint64_t data_start = 0;  // file offset of the data section: 8 + header length
  uint64_t data_size = 0;   // bytes in the data section
  std::vector<SafetensorsEntry> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;

  const SafetensorsEntry* find(const std::string& name) const;
};

// Parses and validates the header of a whole file held in memory (`data` spans the file, `size` bytes).
// `source` names the file in messages. Never throws and never reads outside [data, data + size).
Expected<SafetensorsHeader> parse_safetensors_header(const uint8_t* data, size_t size, const std::string& source);

// "F32" <-> kF32 and so on; I32/I64 are read but never produced by this project.
std::string safetensors_dtype_name(ir::DType dtype);

// One safetensors file mapped read-only for its whole lifetime.
class SafetensorsFile {
 public:
  static Expected<std::unique_ptr<SafetensorsFile>> open(const std::filesystem::path& path);
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return mapped_.path(); }
  const SafetensorsHeader& header() const { return header_; }
  // The tensor's bytes inside the mapping; the parser has checked they lie within the file.
  const uint8_t* bytes(const SafetensorsEntry& entry) const { return mapped_.data() + header_.data_start + entry.begin; }

 private:
  SafetensorsFile() = default;
  support::MappedFile mapped_;
  SafetensorsHeader header_;

};

// A tensor's stored bytes, for uploading without conversion. Valid while the store lives.
struct RawTensor {
  ir::DType dtype;
  std::vector<int64_t> shape;
  const uint8_t* bytes = nullptr;
  size_t size = 0;
};

class SafetensorsStore : public WeightStore {
 public:
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  // Converts F32/F16/BF16 (and I32/I64) to float. Errors name the file and the tensor.
  Status read_f32(const std::string& name, std::vector<float>& out) const override;
  std::string source() const override { return source_; }
  bool dtypes_are_exact() const override { return true; }

  Expected<RawTensor> raw(const std::string& name) const;
  // The files the store mapped, in shard order.
  std::vector<std::filesystem::path> files() const;

 private:
  friend Expected<std::unique_ptr<SafetensorsStore>> open_safetensors_checkpoint(const std::filesystem::path& dir);
  friend Expected<std::unique_ptr<SafetensorsStore>> open_safetensors_files(const std::string& source,
                                                                           const std::vector<std::filesystem::path>& files);
  // Maps `path` and registers its tensors; a name already registered is an error naming both files.
  Status add_file(const std::filesystem::path& path);
  struct Location {
    const SafetensorsFile* file;
    const SafetensorsEntry* entry;
  };
  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, Location> locations_;
};

// Opens `dir/model.safetensors`, or the shards named by `dir/model.safetensors.index.json` when the
// single file is absent (the order Hugging Face looks in).
Expected<std::unique_ptr<SafetensorsStore>> open_safetensors_checkpoint(const std::filesystem::path& dir);

// One store over several safetensors files (a captured model's own weights and the checkpoint it links
// to); a tensor name in two files is an error. `source` names the store in messages.
Expected<std::unique_ptr<SafetensorsStore>> open_safetensors_files(const std::string& source,
                                                                  const std::vector<std::filesystem::path>& files);

// The safetensors files of a checkpoint directory: model.safetensors, or the shards its index names.
Expected<std::vector<std::filesystem::path>> checkpoint_safetensors_files(const std::filesystem::path& dir);

struct TensorToWrite {
  std::string name;
  ir::DType dtype;             // F32, F16, BF16, I32 or I64
  std::vector<int64_t> shape;
  const void* data = nullptr;  // elements × dtype_size bytes, owned by the caller
};

// Writes one safetensors file the way Hugging Face does: header padded with spaces to a multiple of 8,
// tensors sorted by name and laid out contiguously. Written to a temporary name and renamed into place,
// so a reader never sees half a file; up to 8 threads write its pieces at their offsets.
Status write_safetensors(const std::filesystem::path& path, const std::vector<TensorToWrite>& tensors,
                         const std::map<std::string, std::string>& metadata);

}  // namespace agentcompile::frontend
