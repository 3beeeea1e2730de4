// Warm reuse and the artifact cache, and where the cache is (agentcompile::cache_root, declared in the
// public compiler.h since both the compiler and the runtime look there).
#include "emit/artifact_cache.h"

#include <cstdlib>

#include "agentcompile/compiler.h"
#include "emit/artifact_store.h"

namespace agentcompile {

std::filesystem::path cache_root(const std::filesystem::path& cache_dir) {
  namespace fs = std::filesystem;
  if (!cache_dir.empty()) return cache_dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "agentcompile";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "agentcompile";
  return fs::temp_directory_path() / "agentcompile-cache";
}

}  // namespace agentcompile

namespace agentcompile::emit {

namespace fs = std::filesystem;

fs::path artifact_cache_entry(const fs::path& cache_root, const std::string& key) { return cache_root / "artifacts" / key; }

Expected<Reuse> reuse_artifact(const fs::path& output, const fs::path& cache_root, const std::string& key) {
  Reuse reuse;
  std::error_code ec;
  if (fs::exists(output / "metadata.json", ec)) {
    // Another key's artifact is simply replaced; one of this key that fails its check is reported.
    auto record = read_artifact_record(output);
    if (!record) {
      reuse.notes.push_back(output.string() + " cannot be reused: " + record.status().message() + "; compiling again");
    } else if (record->key == key) {
      auto verified = read_verified_artifact(output);
      if (verified && verified->key == key) {
        reuse.record = std::move(*verified);
        reuse.from = output;
        return reuse;
      }
      reuse.notes.push_back("the artifact in " + output.string() + " is damaged: " +
                            (verified ? "it changed while being read" : verified.status().message()) + "; compiling again");
    }
  }
  const fs::path entry = artifact_cache_entry(cache_root, key);
  if (!fs::exists(entry, ec)) return reuse;
  auto cached = read_verified_artifact(entry);
  if (!cached || cached->key != key) {
    const std::string why = cached ? "it holds the artifact of another key (" + cached->key.substr(0, 16) + ")" : cached.status().message();
    const Status discarded = discard_artifact(entry);
    reuse.notes.push_back("the cached artifact " + entry.string() + " is unusable: " + why +
                          (discarded ? "; discarded, compiling again" : "; compiling again (" + discarded.message() + ")"));
    return reuse;
  }
  if (auto copied = copy_artifact(entry, output, Destination::kOutputDir); !copied) return copied.status();
  reuse.record = std::move(*cached);
  reuse.from = entry;
  return reuse;
}

Status store_in_cache(const fs::path& output, const fs::path& cache_root, const std::string& key) {
  auto copied = copy_artifact(output, artifact_cache_entry(cache_root, key), Destination::kCacheEntry);
  return copied ? Status::ok() : copied.status();
}

}  // namespace agentcompile::emit
