// Where an artifact may be written. agentcompile replaces an output directory only when it is new,
// empty, or an agentcompile artifact with nothing else in it, and never one that is or holds the
// model, the cache or the home directory: it never deletes or overwrites what it did not write.
#pragma once

#include <filesystem>

#include "agentcompile/status.h"

namespace agentcompile::emit {

// Refuses (kInvalidArgument) an output directory that is the file system root, is or holds $HOME,
// is or holds the model, is or holds the cache, or lies inside the cache's own entries. Compile on
// first use keeps its per-model artifacts under <cache>/models (emit/artifact_fit.h),
// which stays allowed. An output inside a model directory is allowed: writing it touches nothing
// of the model.
Status check_output_location(const std::filesystem::path& output, const std::filesystem::path& model,
                             const std::filesystem::path& cache_root);

// Refuses (kInvalidArgument) to replace `dir` unless it is missing, an empty directory, or an
// agentcompile artifact (a metadata.json of the artifact format, any version) holding only files
// an artifact holds. The message names what is there.
Status check_output_replaceable(const std::filesystem::path& dir);

}  // namespace agentcompile::emit
