// The output-directory checks: path relations first (clear messages for -o ~, -o MODEL, -o CACHE),
// then what an existing directory holds.
//
// What an artifact holds is the union of two rules, so both older artifacts and ones carrying files
// added later are recognised: the files its metadata.json lists (format 2 and later), and the
// layout every version has written (metadata.json, report.md, CMakeLists.txt, advice.json,
// ablation.json, and kernels/*.cu, include/*.h|*.cuh, cubin/*.cubin, ir/*.ir|*.txt).
#include "emit/output_dir.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "emit/artifact_record.h"
#include "support/durable_files.h"

namespace agentcompile::emit {

namespace fs = std::filesystem;

namespace {

bool in_layout(const fs::path& rel) {
  static const std::set<std::string> top_files = {"metadata.json", "report.md", "CMakeLists.txt", "advice.json", "ablation.json"};
  const std::string ext = rel.extension().string();
  const std::string dir = rel.parent_path().string();
  if (dir.empty()) return top_files.count(rel.string()) > 0;
  if (dir == "kernels") return ext == ".cu";
  if (dir == "include") return ext == ".h" || ext == ".cuh";
  if (dir == "cubin") return ext == ".cubin";
  if (dir == "ir") return ext == ".ir" || ext == ".txt";
  return false;
}

bool layout_dir(const fs::path& rel) {
  const std::string name = rel.string();
  return name == "kernels" || name == "include" || name == "cubin" || name == "ir";
}

std::string listing(const std::vector<std::string>& names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < 6; ++i) text += (i ? ", " : "") + names[i];
  if (names.size() > 6) text += " and " + std::to_string(names.size() - 6) + " more";
  return text;
}

// Entries of `dir` that an artifact does not hold (a foreign directory is named once, not walked).
std::vector<std::string> foreign_entries(const fs::path& dir, const std::set<std::string>& listed) {
  std::set<std::string> listed_dirs;
  for (const auto& path : listed)
    for (fs::path p = fs::path(path).parent_path(); !p.empty(); p = p.parent_path()) listed_dirs.insert(p.string());
  std::vector<std::string> foreign;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::none, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path rel = it->path().lexically_relative(dir);
    const auto status = it->symlink_status(ec);
    if (ec) break;
    if (fs::is_directory(status)) {
      if (layout_dir(rel) || listed_dirs.count(rel.string())) continue;
      foreign.push_back(rel.string() + "/");
      it.disable_recursion_pending();
    } else if (!fs::is_regular_file(status) || !(listed.count(rel.string()) || in_layout(rel))) {
      foreign.push_back(rel.string());
    }
  }
  if (ec) foreign.push_back("(" + dir.string() + " cannot be listed: " + ec.message() + ")");
  return foreign;
}

}  // namespace

Status check_output_location(const fs::path& output, const fs::path& model, const fs::path& cache_root) {
  const fs::path out = support::resolved_path(output);
  auto refuse = [&](const std::string& why) {
    return error(ErrorCode::kInvalidArgument, "refusing to write the artifact into " + output.string() + ": " + why +
                                                  "; choose a new or empty directory for -o");
  };
  if (out == out.root_path()) return refuse("it is the root of the file system");
  // A HOME of "/" (some containers) would hold everything: the root check above covers it.
  if (const char* home = std::getenv("HOME"); home && *home && support::resolved_path(home) != out.root_path() && support::path_within(home, out))
    return refuse(support::resolved_path(home) == out ? "it is your home directory" : "it holds your home directory (" + std::string(home) + ")");
  if (!model.empty() && support::path_within(model, out))
    return refuse(support::resolved_path(model) == out ? "it is the model" : "it holds the model " + model.string());
  if (support::path_within(cache_root, out)) return refuse("it is or holds agentcompile's cache " + cache_root.string());
  if (support::path_within(out, cache_root) && !support::path_within(out, cache_root / "models"))
    return refuse("it lies inside agentcompile's cache " + cache_root.string() + ", which agentcompile manages itself");
  return Status::ok();
}

Status check_output_replaceable(const fs::path& dir) {
  std::error_code ec;
  const auto status = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(status)) return Status::ok();
  const fs::path real = support::resolved_path(dir);
  if (!fs::is_directory(real, ec))
    return error(ErrorCode::kInvalidArgument, "refusing to write the artifact into " + dir.string() + ": it exists and is not a directory");
  if (fs::is_empty(real, ec) && !ec) return Status::ok();

  const auto format = artifact_format_of(real);
  if (!format) {
    std::vector<std::string> entries;
    for (const auto& item : fs::directory_iterator(real, ec))
      entries.push_back(item.path().filename().string() + (item.is_directory(ec) && !item.is_symlink(ec) ? "/" : ""));
    std::sort(entries.begin(), entries.end());
    const std::string why = fs::exists(real / "metadata.json", ec)
                                ? "it is not an agentcompile artifact: its metadata.json is not one (" + format.status().message() + ")"
                                : "it is not an agentcompile artifact (it holds " + listing(entries) + ")";
    return error(ErrorCode::kInvalidArgument, "refusing to write the artifact into " + dir.string() + ": " + why +
                                                  "; agentcompile replaces only its own artifacts and never deletes what it did not write: "
                                                  "choose a new or empty directory for -o");
  }
  std::set<std::string> listed;
  if (auto record = read_artifact_record(real))
    for (const auto& file : record->files) listed.insert(file.path);
  const std::vector<std::string> foreign = foreign_entries(real, listed);
  if (!foreign.empty())
    return error(ErrorCode::kInvalidArgument, "refusing to replace the artifact in " + dir.string() + ": it also holds " + listing(foreign) +
                                                  ", which agentcompile did not write; move them out or choose another directory for -o");
  return Status::ok();
}

}  // namespace agentcompile::emit
