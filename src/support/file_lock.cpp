// flock(2) on a lock file beside the guarded directory.
#include "support/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace agentcompile::support {

namespace fs = std::filesystem;

Expected<FileLock> FileLock::acquire(const fs::path& lock_file, Mode mode) {
  std::error_code ec;
  if (lock_file.has_parent_path()) fs::create_directories(lock_file.parent_path(), ec);
  if (ec) return error(ErrorCode::kIo, lock_file.parent_path().string() + ": cannot create: " + ec.message());
  const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return error(ErrorCode::kIo, lock_file.string() + ": cannot open the lock file: " + std::system_category().message(errno));
  int rc;
  do rc = ::flock(fd, mode == Mode::kShared ? LOCK_SH : LOCK_EX);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    return error(ErrorCode::kIo, lock_file.string() + ": cannot lock: " + std::system_category().message(err));
  }
  return FileLock(fd);
}

fs::path FileLock::beside(const fs::path& dir) {
  const fs::path clean = dir.has_filename() ? dir : dir.parent_path();  // "out/" names "out"
  return clean.parent_path() / ("." + clean.filename().string() + ".lock");
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace agentcompile::support
