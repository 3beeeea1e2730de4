// Warm compiles: reusing an artifact of the same key from the output directory or from the cache
// (<cache>/artifacts/<key>, a copy of every artifact compiled). Nothing is reused before every file
// it lists has been checked; a damaged artifact is reported and compiled again, a damaged cache
// entry is discarded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "emit/artifact_record.h"

namespace agentcompile::emit {

// The cache entry of an artifact key.
std::filesystem::path artifact_cache_entry(const std::filesystem::path& cache_root, const std::string& key);

struct Reuse {
  std::optional<ArtifactRecord> record;  // set: `output` now holds a verified artifact of the key
  std::filesystem::path from;            // where it came from: `output` itself or the cache entry
  std::vector<std::string> notes;        // what was found damaged or unreadable, and what was done about it
};

// The output directory when it holds a verified artifact of `key`; else a verified cache entry of
// `key`, copied into `output`; else no record (compile). Errors only when `output` cannot take the
// copy (emit/output_dir.h) or the copy fails.
Expected<Reuse> reuse_artifact(const std::filesystem::path& output, const std::filesystem::path& cache_root, const std::string& key);

// Stores a verified copy of the artifact in `output` as the cache entry of `key`.
Status store_in_cache(const std::filesystem::path& output, const std::filesystem::path& cache_root, const std::string& key);

}  // namespace agentcompile::emit
