// Temporary-then-rename writes with fsync, and directory swaps.
#include "support/durable_files.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <vector>

namespace agentcompile::support {

namespace fs = std::filesystem;

namespace {

std::string errno_text(int err) { return std::system_category().message(err); }

Status write_all(int fd, std::string_view bytes, const fs::path& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return error(ErrorCode::kIo, path.string() + ": write failed after " + std::to_string(done) + " bytes: " + errno_text(errno));
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return error(ErrorCode::kIo, path.string() + ": fsync failed: " + errno_text(errno));
  return Status::ok();
}

// Writes and syncs an open descriptor, then closes it (a failing close is a failed write: NFS reports
// errors there).
Status write_and_close(int fd, std::string_view bytes, const fs::path& path) {
  Status status = write_all(fd, bytes, path);
  if (::close(fd) != 0 && status) status = error(ErrorCode::kIo, path.string() + ": close failed: " + errno_text(errno));
  return status;
}

fs::path without_trailing_slash(const fs::path& path) { return path.has_filename() ? path : path.parent_path(); }

}  // namespace

Status write_file_synced(const fs::path& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return error(ErrorCode::kIo, path.string() + ": cannot create: " + errno_text(errno));
  return write_and_close(fd, bytes, path);
}

Status replace_file_atomically(const fs::path& path, std::string_view bytes) {
  std::string temp = (path.parent_path() / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  if (fd < 0) return error(ErrorCode::kIo, path.string() + ": cannot create a temporary file beside it: " + errno_text(errno));
  ::fchmod(fd, 0644);  // mkostemp creates 0600; cache entries are shared like any other file
  if (Status written = write_and_close(fd, bytes, temp); !written) {
    ::unlink(temp.c_str());
    return written;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return error(ErrorCode::kIo, path.string() + ": cannot rename the temporary file into place: " + errno_text(err));
  }
  return sync_path(path.parent_path().empty() ? fs::path(".") : path.parent_path());
}

Status sync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return error(ErrorCode::kIo, path.string() + ": cannot open to sync: " + errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // Some file systems refuse fsync on a directory (EINVAL): nothing more can be done there.
  if (rc != 0 && err != EINVAL) return error(ErrorCode::kIo, path.string() + ": fsync failed: " + errno_text(err));
  return Status::ok();
}

Expected<std::string> read_file_bytes(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, path.string() + ": cannot open: " + errno_text(err));
  }
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return error(ErrorCode::kIo, path.string() + ": read failed: " + errno_text(err));
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

Expected<fs::path> make_temp_dir_beside(const fs::path& target, const std::string& tag) {
  const fs::path clean = without_trailing_slash(target);
  const fs::path parent = clean.parent_path().empty() ? fs::path(".") : clean.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return error(ErrorCode::kIo, parent.string() + ": cannot create: " + ec.message());
  std::string pattern = (parent / ("." + clean.filename().string() + "." + tag + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) return error(ErrorCode::kIo, "cannot create a temporary directory in " + parent.string() + ": " + errno_text(errno));
  ::chmod(pattern.c_str(), 0755);  // mkdtemp creates 0700; the result is an ordinary directory
  return fs::path(pattern);
}

Status replace_directory(const fs::path& staged, const fs::path& raw_target) {
  const fs::path target = without_trailing_slash(raw_target);
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  // rename(2) moves a directory onto a missing name or onto an empty directory in one step.
  if (::rename(staged.c_str(), target.c_str()) == 0) return sync_path(parent);
  if (errno != ENOTEMPTY && errno != EEXIST)
    return error(ErrorCode::kIo, target.string() + ": cannot move " + staged.string() + " into place: " + errno_text(errno));

  // `target` holds a previous result: swap the two, then delete the previous one (now at `staged`).
  fs::path previous = staged;
  if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
      return error(ErrorCode::kIo, target.string() + ": cannot swap in " + staged.string() + ": " + errno_text(errno));
    // No atomic exchange here: move the previous result aside first; readers see no directory for a moment, never a mixed one.
    previous = staged.string() + "-previous";
    if (::rename(target.c_str(), previous.c_str()) != 0)
      return error(ErrorCode::kIo, target.string() + ": cannot move the previous result aside: " + errno_text(errno));
    if (::rename(staged.c_str(), target.c_str()) != 0) {
      const int err = errno;
      ::rename(previous.c_str(), target.c_str());  // put the previous result back
      return error(ErrorCode::kIo, target.string() + ": cannot move " + staged.string() + " into place: " + errno_text(err));
    }
  }
  AC_TRY(sync_path(parent));
  std::error_code ec;
  fs::remove_all(previous, ec);
  if (ec) return error(ErrorCode::kIo, previous.string() + ": the previous result was replaced but cannot be removed: " + ec.message());
  return Status::ok();
}

fs::path resolved_path(const fs::path& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  fs::path canonical = fs::weakly_canonical(absolute, ec);
  if (ec) canonical = absolute.lexically_normal();
  return without_trailing_slash(canonical);
}

bool path_within(const fs::path& inner, const fs::path& outer) {
  const fs::path in = resolved_path(inner), out = resolved_path(outer);
  auto i = in.begin();
  for (auto o = out.begin(); o != out.end(); ++o, ++i)
    if (i == in.end() || *i != *o) return false;
  return true;
}

}  // namespace agentcompile::support
