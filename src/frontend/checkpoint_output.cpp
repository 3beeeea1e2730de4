// The checks on an existing output directory, and the move of a complete checkpoint into it.
#include "frontend/checkpoint_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "support/durable_files.h"

namespace agentcompile::frontend {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Files a loader reads as weights: a stale one beside the new checkpoint would be loaded with it
// (model.safetensors is picked before an index) or contradict it.
bool is_weight_file(const std::string& name) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  return name == "model.safetensors" || name == "model.safetensors.index.json" || std::regex_match(name, shard);
}

// The files the record in `dir` lists that are still there with their recorded size.
std::map<std::string, uint64_t> recorded_files(const fs::path& dir, bool* has_record) {
  std::map<std::string, uint64_t> files;
  auto text = support::read_file_bytes(dir / CheckpointOutput::kRecordName);
  *has_record = false;
  if (!text) return files;
  const json record = json::parse(*text, nullptr, false);
  if (!record.is_object() || !record.contains("files") || !record["files"].is_object()) return files;
  *has_record = true;
  for (const auto& [name, size] : record["files"].items()) {
    std::error_code ec;
    // Names are plain file names: a record never reaches outside its directory.
    if (!size.is_number_unsigned() || name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") continue;
    if (fs::is_regular_file(fs::symlink_status(dir / name, ec)) && fs::file_size(dir / name, ec) == size.get<uint64_t>())
      files[name] = size.get<uint64_t>();
  }
  return files;
}

std::string listing(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < 6; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > 6) text += " and " + std::to_string(names.size() - 6) + " more";
  return text;
}

}  // namespace

Expected<CheckpointOutput> CheckpointOutput::open(const fs::path& out_dir, const std::vector<std::string>& names, bool force) {
  CheckpointOutput output;
  output.out_dir_ = support::resolved_path(out_dir);
  output.names_ = names;
  std::error_code ec;
  const auto status = fs::symlink_status(output.out_dir_, ec);
  if (fs::exists(status) && !fs::is_directory(fs::status(output.out_dir_, ec)))
    return error(ErrorCode::kIo, out_dir.string() + ": exists and is not a directory");
  output.replace_whole_ = !fs::exists(status) || fs::is_empty(output.out_dir_, ec);
  if (!output.replace_whole_) {
    bool has_record = false;
    output.previous_ = recorded_files(output.out_dir_, &has_record);
    if (!has_record && !force)
      return error(ErrorCode::kInvalidArgument, out_dir.string() + " is not empty and holds no checkpoint init-random wrote (no " +
                                                    kRecordName + "); nothing was changed. Choose a new or empty directory, or "
                                                    "pass --force to write the checkpoint's files into it (other files are kept)");
    const std::set<std::string> writing(names.begin(), names.end());
    std::vector<std::string> theirs, shadowing;
    for (const auto& item : fs::directory_iterator(output.out_dir_, ec)) {
      const std::string name = item.path().filename().string();
      if (name == kRecordName || output.previous_.count(name)) continue;  // ours: replaced or removed
      if (writing.count(name)) theirs.push_back(name);
      else if (is_weight_file(name)) shadowing.push_back(name);
    }
    if (ec) return error(ErrorCode::kIo, out_dir.string() + ": cannot list: " + ec.message());
    if (!shadowing.empty())
      return error(ErrorCode::kInvalidArgument, out_dir.string() + " holds " + listing(shadowing) +
                                                    ", which init-random did not write and which would be read with the new checkpoint; "
                                                    "nothing was changed. Remove them or choose another directory");
    if (!theirs.empty() && !force)
      return error(ErrorCode::kInvalidArgument, out_dir.string() + ": " + listing(theirs) +
                                                    " were not written by init-random (or changed since); nothing was changed. Pass --force to replace them");
  }
  AC_ASSIGN_OR_RETURN(output.staging_, support::make_temp_dir_beside(output.out_dir_, "init-random"));
  return output;
}

CheckpointOutput::CheckpointOutput(CheckpointOutput&& other) noexcept
    : out_dir_(std::move(other.out_dir_)), staging_(std::move(other.staging_)), names_(std::move(other.names_)),
      previous_(std::move(other.previous_)), replace_whole_(other.replace_whole_), committed_(other.committed_) {
  other.staging_.clear();
}

CheckpointOutput::~CheckpointOutput() {
  std::error_code ec;
  if (!committed_ && !staging_.empty()) fs::remove_all(staging_, ec);  // ours alone; the output is untouched
}

Status CheckpointOutput::commit() {
  json record = {{"written_by", "agentcompile init-random"}, {"files", json::object()}};
  for (const auto& name : names_) {
    std::error_code ec;
    record["files"][name] = fs::file_size(staged(name), ec);
    if (ec) return error(ErrorCode::kIo, staged(name).string() + ": " + ec.message());
    AC_TRY(support::sync_path(staged(name)));
  }
  AC_TRY(support::write_file_synced(staged(kRecordName), record.dump(2) + "\n"));
  AC_TRY(support::sync_path(staging_));
  if (replace_whole_) {
    AC_TRY(support::replace_directory(staging_, out_dir_));
    committed_ = true;
    return Status::ok();
  }
  // Other files live in the directory: the checkpoint's files move in one by one (each rename is
  // atomic), the record last, then the files a previous run wrote and this one did not go.
  std::vector<std::string> moving = names_;
  moving.push_back(kRecordName);
  for (const auto& name : moving)
    if (std::rename(staged(name).c_str(), (out_dir_ / name).c_str()) != 0)
      return error(ErrorCode::kIo, (out_dir_ / name).string() + ": cannot move the new file into place: " + std::strerror(errno));
  committed_ = true;
  const std::set<std::string> written(names_.begin(), names_.end());
  std::error_code ec;
  for (const auto& [name, size] : previous_)
    if (!written.count(name)) fs::remove(out_dir_ / name, ec);
  fs::remove(staging_, ec);
  return support::sync_path(out_dir_);
}

}  // namespace agentcompile::frontend
