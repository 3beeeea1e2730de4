// An advisory lock (flock) on a lock file, held for the object's lifetime, so that processes writing
// one directory (an artifact, a cache entry, a checkpoint) take turns, and readers never see a
// directory being swapped.
//
// The lock file of a directory lives beside it ("<parent>/.<name>.lock"), not in it: the directory
// itself is replaced by a rename. Lock files are left in place; deleting one while another process
// waits on it would let two holders in.
#pragma once

#include <filesystem>

#include "agentcompile/status.h"

namespace agentcompile::support {

class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Blocks until the lock is granted. Creates the lock file (and its parent) when missing.
  static Expected<FileLock> acquire(const std::filesystem::path& lock_file, Mode mode);
  // The lock file that guards directory `dir`.
  static std::filesystem::path beside(const std::filesystem::path& dir);

  FileLock() = default;
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace agentcompile::support
