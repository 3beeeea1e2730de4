// Writing files and directories so that a failure or a crash never leaves half a result where a
// complete one was: write into a temporary beside the target, fsync it, rename it into place, fsync
// the parent. The artifact writer (emit/), the NVRTC cache (codegen/) and init-random (frontend/)
// publish their outputs this way.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "agentcompile/status.h"

namespace agentcompile::support {

// Writes `bytes` to `path` (created or truncated) and fsyncs it. Errors name the path and the reason.
Status write_file_synced(const std::filesystem::path& path, std::string_view bytes);

// Writes `bytes` to a fresh temporary file beside `path`, fsyncs it and renames it over `path`:
// readers, in this process or another, see the old file or the new one, never part of one.
Status replace_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// fsync of an existing file or directory (a directory's fsync makes the names in it durable).
Status sync_path(const std::filesystem::path& path);

// The whole file. kNotFound when it does not exist, kIo when it cannot be read.
Expected<std::string> read_file_bytes(const std::filesystem::path& path);

// A new, empty directory beside `target` (same parent, so the rename into place stays on one file
// system): "<parent>/.<name>.<tag>-XXXXXX". Creates the parent when it is missing.
Expected<std::filesystem::path> make_temp_dir_beside(const std::filesystem::path& target, const std::string& tag);

// Moves the complete directory `staged` to `target` and syncs the parent. A missing or empty
// `target` is replaced by one rename; an existing one is swapped out in one step (renameat2
// RENAME_EXCHANGE, or two renames where the file system lacks it) and deleted afterwards, so the
// caller must have checked that everything in it may be deleted.
Status replace_directory(const std::filesystem::path& staged, const std::filesystem::path& target);

// `path` made absolute with symlinks and ".." resolved as far as it exists.
std::filesystem::path resolved_path(const std::filesystem::path& path);

// Whether `inner` is `outer` or lies inside it, both resolved (relative paths, symlinks, "..").
bool path_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

}  // namespace agentcompile::support
