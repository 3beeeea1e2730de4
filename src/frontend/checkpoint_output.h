// Where a checkpoint that agentcompile writes (init-random) goes, without ever destroying one that
// is there: every file is written into a temporary directory beside the output and moved into place
// only when all of them are complete, so a failure leaves the previous checkpoint as it was.
//
// The output directory records what it wrote in agentcompile-init-random.json (file names and
// sizes). A non-empty directory without that record is someone else's: it is refused unless the
// caller forces the write, and even then only the files of the new checkpoint are replaced. Files
// a previous run wrote and this one does not (shards of another layout) are removed after the new
// checkpoint is in place, and only while they still have the size recorded for them; a weight file
// it did not write that would be read together with the new checkpoint is always refused.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::frontend {

class CheckpointOutput {
 public:
  // The record of what a run wrote, kept in the output directory.
  static constexpr const char* kRecordName = "agentcompile-init-random.json";

  // Checks `out_dir` for a checkpoint of the files `names` (refusing as described above) and
  // creates the temporary directory to write them into.
  static Expected<CheckpointOutput> open(const std::filesystem::path& out_dir, const std::vector<std::string>& names, bool force);

  CheckpointOutput(CheckpointOutput&& other) noexcept;
  CheckpointOutput& operator=(CheckpointOutput&&) = delete;
  CheckpointOutput(const CheckpointOutput&) = delete;
  ~CheckpointOutput();  // removes the temporary directory unless committed

  // Where the files are written before commit().
  std::filesystem::path staged(const std::string& name) const { return staging_ / name; }

  // Syncs the written files and moves them, then the record, into the output directory.
  Status commit();

 private:
  CheckpointOutput() = default;
  std::filesystem::path out_dir_, staging_;
  std::vector<std::string> names_;
  std::map<std::string, uint64_t> previous_;  // files a previous run wrote that still have their recorded size
  bool replace_whole_ = false;                // the output is missing or empty: one rename
  bool committed_ = false;
};

}  // namespace agentcompile::frontend
