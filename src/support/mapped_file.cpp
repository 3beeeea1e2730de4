// open + fstat + mmap, with errors that name the path.
#include "support/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace agentcompile::support {

namespace {
std::string errno_text(int err) { return std::system_category().message(err); }
}  // namespace

Expected<MappedFile> MappedFile::open(const std::filesystem::path& path) {
  const std::string name = path.string();
  const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, name + ": cannot open: " + errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return error(ErrorCode::kIo, name + ": cannot stat: " + errno_text(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(ErrorCode::kIo, name + ": not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {  // mmap refuses a zero length; an empty file is left to the format's checks
    void* base = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return error(ErrorCode::kIo, name + ": cannot mmap " + std::to_string(file.size_) + " bytes: " + errno_text(err));
    }
    file.base_ = static_cast<const uint8_t*>(base);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept : path_(std::move(other.path_)), base_(other.base_), size_(other.size_) {
  other.base_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
    path_ = std::move(other.path_);
    base_ = other.base_;
    size_ = other.size_;
    other.base_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (base_) ::munmap(const_cast<uint8_t*>(base_), size_);
}

const uint8_t* MappedFile::data() const {
  static const uint8_t kEmpty = 0;
  return base_ ? base_ : &kEmpty;
}

}  // namespace agentcompile::support
