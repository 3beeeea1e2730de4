// Putting artifacts on disk and taking them off it whole: the atomic publish of a directory of
// files, the verified read, the verified copy (cache to output and back), under the directory's lock.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "agentcompile/status.h"
#include "emit/artifact_record.h"

namespace agentcompile::emit {

// Every file of an artifact but metadata.json, by path relative to the artifact directory.
using ArtifactFiles = std::map<std::string, std::string>;

// What may be at the destination of a write.
enum class Destination {
  kOutputDir,   // a user's -o: replaced only when check_output_replaceable allows it
  kCacheEntry,  // an entry of agentcompile's own cache: whatever is there is discarded
};

// Writes `files` and then `metadata_text` as metadata.json into a temporary directory beside `dir`,
// fsyncs them, and, holding `dir`'s exclusive lock, renames it into place. On any failure the
// temporary directory is removed and `dir` is as it was.
Status publish_artifact(const ArtifactFiles& files, const std::string& metadata_text, const std::filesystem::path& dir, Destination destination);

// Reads `dir`'s record and checks every file it lists (verify_artifact_files), holding `dir`'s
// shared lock so no writer swaps the directory meanwhile.
Expected<ArtifactRecord> read_verified_artifact(const std::filesystem::path& dir);

// Copies the artifact in `from` to `to` (publish_artifact): every listed file is checked against its
// size and hash as it is read, so a damaged source is never copied.
Expected<ArtifactRecord> copy_artifact(const std::filesystem::path& from, const std::filesystem::path& to, Destination destination);

// Removes `dir` under its exclusive lock (a damaged cache entry).
Status discard_artifact(const std::filesystem::path& dir);

}  // namespace agentcompile::emit
