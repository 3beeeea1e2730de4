// Putting an artifact on disk once, atomically: the files (each one's size and SHA-256 recorded in
// metadata.json by the writer, emit/writer.cpp) go into a temporary directory beside the destination,
// are fsync'd, and the directory is renamed into place under the destination's lock. Reads and copies
// check every file against those records, so a damaged artifact is never reused or copied.
#include "emit/artifact_store.h"

#include <set>

#include "emit/output_dir.h"
#include "support/durable_files.h"
#include "support/file_lock.h"

namespace agentcompile::emit {

namespace fs = std::filesystem;
using support::FileLock;

namespace {

// Writes every file and then metadata.json into `staged` and syncs them and their directories.
Status write_into(const fs::path& staged, const ArtifactFiles& files, const std::string& metadata_text) {
  std::set<fs::path> dirs = {staged};
  for (const auto& [rel, bytes] : files) {
    const fs::path path = staged / rel;
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return error(ErrorCode::kIo, path.parent_path().string() + ": cannot create: " + ec.message());
    dirs.insert(path.parent_path());
    AC_TRY(support::write_file_synced(path, bytes));
  }
  AC_TRY(support::write_file_synced(staged / "metadata.json", metadata_text));
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) AC_TRY(support::sync_path(*it));  // children before parents
  return Status::ok();
}

// A reader's lock: where the lock file cannot be created (a read-only location) no writer can swap
// the directory either, so reading goes on without one.
std::optional<FileLock> reader_lock(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;  // nothing to read: no lock file is left behind
  auto lock = FileLock::acquire(FileLock::beside(support::resolved_path(dir)), FileLock::Mode::kShared);
  if (!lock) return std::nullopt;
  return std::move(*lock);
}

}  // namespace

Status publish_artifact(const ArtifactFiles& files, const std::string& metadata_text, const fs::path& dir, Destination destination) {
  const fs::path target = support::resolved_path(dir);
  if (destination == Destination::kOutputDir) AC_TRY(check_output_replaceable(dir));  // before any work: fail fast
  AC_ASSIGN_OR_RETURN(fs::path staged, support::make_temp_dir_beside(target, "tmp"));
  Status status = write_into(staged, files, metadata_text);
  if (status) {
    auto lock = FileLock::acquire(FileLock::beside(target), FileLock::Mode::kExclusive);
    if (!lock) status = lock.status();
    // Again under the lock: another process may have written `dir` since the first check.
    if (status && destination == Destination::kOutputDir) status = check_output_replaceable(dir);
    if (status) status = support::replace_directory(staged, target);
  }
  std::error_code ec;
  if (!status) fs::remove_all(staged, ec);  // ours alone: the destination is untouched
  return status;
}

Expected<ArtifactRecord> read_verified_artifact(const fs::path& dir) {
  const auto lock = reader_lock(dir);
  AC_ASSIGN_OR_RETURN(ArtifactRecord record, read_artifact_record(dir));
  AC_TRY(verify_artifact_files(dir, record));
  return record;
}

Expected<ArtifactRecord> copy_artifact(const fs::path& from, const fs::path& to, Destination destination) {
  ArtifactFiles files;
  std::string metadata_text;
  ArtifactRecord record;
  {
    const auto lock = reader_lock(from);
    AC_ASSIGN_OR_RETURN(metadata_text, support::read_file_bytes(from / "metadata.json"));
    AC_ASSIGN_OR_RETURN(record, parse_artifact_text(metadata_text, (from / "metadata.json").string()));
    for (const FileEntry& file : record.files) {
      auto bytes = support::read_file_bytes(from / file.path);
      if (!bytes) return error(ErrorCode::kMismatch, from.string() + ": " + bytes.status().message());
      AC_TRY(check_file_bytes(file, *bytes).with_context(from.string()));
      files.emplace(file.path, std::move(*bytes));
    }
  }
  AC_TRY(publish_artifact(files, metadata_text, to, destination));
  return record;
}

Status discard_artifact(const fs::path& dir) {
  AC_ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(FileLock::beside(support::resolved_path(dir)), FileLock::Mode::kExclusive));
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) return error(ErrorCode::kIo, dir.string() + ": cannot remove: " + ec.message());
  return Status::ok();
}

}  // namespace agentcompile::emit
