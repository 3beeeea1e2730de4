// A file mapped read-only for the lifetime of the object (checkpoints: safetensors shards, GGUF).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "agentcompile/status.h"

namespace agentcompile::support {

class MappedFile {
 public:
  // Errors: kNotFound when the file does not exist, kIo otherwise; both name the path.
  static Expected<MappedFile> open(const std::filesystem::path& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::filesystem::path& path() const { return path_; }
  // The bytes; never null (an empty file maps to a static empty buffer).
  const uint8_t* data() const;
  size_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace agentcompile::support
