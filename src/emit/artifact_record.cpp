// metadata.json into typed records, and the check that an artifact's files are the ones it lists.
//
// nlohmann::json throws on a member of the wrong type; every access here runs inside one try block
// that turns the exception into a parse error naming the member being read, so no shape of input
// escapes as an exception.
#include "emit/artifact_record.h"

#include <algorithm>
#include <stdexcept>

#include "support/durable_files.h"
#include "support/sha256.h"

namespace agentcompile::emit {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// A member that must be present with type T.
template <typename T>
T required(const json& object, const char* name) {
  return object.at(name).get<T>();
}

// A member that may be absent or null; present, it must have type T.
template <typename T>
T optional_member(const json& object, const char* name, T fallback) {
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? fallback : it->get<T>();
}

const json& required_object(const json& object, const char* name) {
  const json& member = object.at(name);
  if (!member.is_object()) throw std::invalid_argument(std::string("'") + name + "' is not an object");
  return member;
}

const json& required_array(const json& object, const char* name) {
  const json& member = object.at(name);
  if (!member.is_array()) throw std::invalid_argument(std::string("'") + name + "' is not an array");
  return member;
}

Expected<plan::Extent> extent_from_json(const json& j) {
  if (!j.is_object()) return error(ErrorCode::kParse, "a launch grid extent is not an object");
  return plan::Extent{optional_member(j, "per_token", int64_t{0}), optional_member(j, "fixed", int64_t{1}),
                      optional_member(j, "divisor", int64_t{1})};
}

Expected<plan::Launch> launch_from_json(const json& j) {
  if (!j.is_object()) return error(ErrorCode::kParse, "a launch is not an object");
  plan::Launch launch;
  launch.kernel = optional_member<std::string>(j, "kernel", "");
  if (launch.kernel.empty()) return error(ErrorCode::kParse, "a launch has no kernel name");
  const json& grid = j.at("grid");
  if (!grid.is_array() || grid.size() != 3) return error(ErrorCode::kParse, "launch " + launch.kernel + ": grid is not 3 extents");
  AC_ASSIGN_OR_RETURN(launch.grid_x, extent_from_json(grid[0]));
  AC_ASSIGN_OR_RETURN(launch.grid_y, extent_from_json(grid[1]));
  AC_ASSIGN_OR_RETURN(launch.grid_z, extent_from_json(grid[2]));
  if (launch.grid_x.divisor <= 0 || launch.grid_y.divisor <= 0 || launch.grid_z.divisor <= 0)
    return error(ErrorCode::kParse, "launch " + launch.kernel + ": a grid divisor is not positive");
  launch.block_x = optional_member(j, "block", 0);
  if (launch.block_x <= 0 || launch.block_x > 1024)
    return error(ErrorCode::kParse, "launch " + launch.kernel + ": block size " + std::to_string(launch.block_x) + " is not in 1..1024");
  launch.shared_bytes = optional_member(j, "shared_bytes", int64_t{0});
  launch.library = optional_member(j, "library", false);
  launch.library_args = optional_member(j, "library_args", std::map<std::string, std::string>{});
  return launch;
}

std::vector<FileEntry> files_from_json(const json& meta) {
  std::vector<FileEntry> files;
  for (const json& f : required_array(meta, "files")) {
    FileEntry entry{required<std::string>(f, "path"), required<uint64_t>(f, "bytes"), required<std::string>(f, "sha256")};
    // Paths are relative and stay inside the artifact: a reader never opens a file elsewhere.
    const fs::path path(entry.path);
    const bool escapes = std::any_of(path.begin(), path.end(), [](const fs::path& part) { return part == ".." || part == "."; });
    if (entry.path.empty() || path.is_absolute() || escapes || entry.path == "metadata.json")
      throw std::invalid_argument("files: '" + entry.path + "' is not a file of the artifact");
    files.push_back(std::move(entry));
  }
  return files;
}

// The record, with `context` following the member being read so an error can name it.
Expected<ArtifactRecord> parse_members(const json& m, std::string& context) {
  ArtifactRecord a;
  context = "format";
  a.format = required<std::string>(m, "format");
  if (a.format != kArtifactFormat)
    return error(ErrorCode::kUnsupported, "artifact format '" + a.format + "', this build reads " + kArtifactFormat);
  context = "key";
  a.key = required<std::string>(m, "key");
  context = "model";
  const json& model = required_object(m, "model");
  a.model = {optional_member<std::string>(model, "model_type", ""), optional_member<std::string>(model, "dtype", ""),
             optional_member<std::string>(model, "config_sha256", ""), optional_member(model, "hidden_size", int64_t{0}),
             optional_member(model, "num_layers", int64_t{0})};
  context = "device";
  const json& device = required_object(m, "device");
  a.device = {optional_member<std::string>(device, "name", ""), required<std::string>(device, "arch")};
  context = "gpu_used";
  a.gpu_used = required<bool>(m, "gpu_used");
  context = "files";
  a.files = files_from_json(m);
  context = "runtime_kernels";
  if (auto it = m.find("runtime_kernels"); it != m.end() && !it->is_null()) {
    for (const auto& [role, entry] : required_object(m, "runtime_kernels").items()) {
      context = "runtime_kernels." + role;
      RuntimeKernelEntry kernel{required<std::string>(entry, "kernel"), required<std::string>(entry, "cubin")};
      const bool listed = std::any_of(a.files.begin(), a.files.end(), [&](const FileEntry& f) { return f.path == kernel.cubin; });
      if (!listed) return error(ErrorCode::kParse, "runtime kernel " + role + ": its cubin '" + kernel.cubin + "' is not a listed file");
      a.runtime_kernels.emplace(role, std::move(kernel));
    }
  }
  context = "advisor";
  if (auto it = m.find("advisor"); it != m.end() && it->is_object()) a.advisor_line = optional_member<std::string>(*it, "line", "");

  for (const json& r : required_array(m, "regions")) {
    RegionEntry region;
    context = "regions[" + std::to_string(a.regions.size()) + "]";
    region.id = required<std::string>(r, "id");
    context = "region " + region.id;
    region.label = optional_member<std::string>(r, "label", "");
    std::map<std::string, const json*> by_id;
    for (const json& c : required_array(r, "candidates")) {
      CandidateEntry candidate{required<std::string>(c, "id"), false, ""};
      context = "region " + region.id + ", candidate " + candidate.id;
      if (auto it = c.find("compile"); it != c.end() && !it->is_null()) candidate.compiled = optional_member(required_object(c, "compile"), "ok", false);
      if (auto it = c.find("validation"); it != c.end() && !it->is_null())
        candidate.validation = optional_member<std::string>(required_object(c, "validation"), "status", "");
      by_id[candidate.id] = &c;
      region.candidates.push_back(std::move(candidate));
    }
    for (const json& s : required_array(r, "selection")) {
      SelectionEntry selection;
      selection.bucket = required<std::string>(s, "bucket");
      context = "region " + region.id + ", selection for " + selection.bucket;
      selection.reason = optional_member<std::string>(s, "reason", "");
      const json& candidate = s.at("candidate");
      if (!candidate.is_null()) {
        const std::string id = candidate.get<std::string>();
        selection.candidate = id;
        const auto listed = by_id.find(id);
        if (listed == by_id.end()) return error(ErrorCode::kParse, "region " + region.id + " selects " + id + ", which it does not list");
        if (!region.selected.count(id)) {
          auto parsed = candidate_from_json(*listed->second);
          if (!parsed) return parsed.status().with_context("region " + region.id);
          region.selected.emplace(id, std::move(*parsed));
        }
      }
      region.selections.push_back(std::move(selection));
    }
    a.regions.push_back(std::move(region));
  }

  context = "functions";
  for (const auto& [name, f] : required_object(m, "functions").items()) {
    context = "function " + name;
    FunctionRecord function;
    function.name = name;
    for (const json& b : required_array(f, "buckets"))
      function.buckets.push_back({required<std::string>(b, "name"), required<int64_t>(b, "min_tokens"), required<int64_t>(b, "max_tokens"),
                                  optional_member(b, "min_context", int64_t{0}), optional_member(b, "max_context", int64_t{0})});
    for (const json& s : required_array(f, "sites")) {
      SiteRecord site;
      site.site = required<int>(s, "site");
      site.region = required<std::string>(s, "region");
      site.inputs = required<std::vector<ir::ValueId>>(s, "inputs");
      site.outputs = required<std::vector<ir::ValueId>>(s, "outputs");
      site.params = required<std::vector<std::string>>(s, "params");
      site.states = required<std::vector<std::string>>(s, "states");
      const bool known = std::any_of(a.regions.begin(), a.regions.end(), [&](const RegionEntry& r) { return r.id == site.region; });
      if (!known) return error(ErrorCode::kParse, "site " + std::to_string(site.site) + " of " + name + " refers to unknown region " + site.region);
      function.sites.push_back(std::move(site));
    }
    a.functions.emplace(name, std::move(function));
  }
  return a;
}

}  // namespace

Expected<const BucketRecord*> FunctionRecord::bucket_for(int64_t tokens, int64_t context) const {
  for (const auto& b : buckets)
    if (b.holds(tokens, context)) return &b;
  std::string ranges;
  for (const auto& b : buckets) ranges += (ranges.empty() ? "" : ", ") + b.name;
  return error(ErrorCode::kInvalidArgument, "function " + name + " has no bucket for " + std::to_string(tokens) + " tokens at a context of " +
                                                std::to_string(context) + " (buckets: " + ranges + ")");
}

Expected<plan::Candidate> candidate_from_json(const json& j) {
  try {
    if (!j.is_object()) return error(ErrorCode::kParse, "a candidate record is not an object");
    plan::Candidate c;
    c.id = required<std::string>(j, "id");
    c.spelled_name = optional_member(j, "name", c.id);
    c.family = optional_member<std::string>(j, "family", "");
    c.template_file = optional_member<std::string>(j, "template", "");
    c.fusion = optional_member<std::string>(j, "fusion", "");
    c.params = optional_member(j, "params", plan::ParamSet{});
    c.match.variant = optional_member<std::string>(j, "variant", "");
    c.match.roles = optional_member(j, "roles", std::map<std::string, std::string>{});
    c.match.facts = optional_member(j, "facts", std::map<std::string, int64_t>{});
    const auto dtype = ir::parse_dtype(optional_member<std::string>(j, "dtype", "f16"));
    const auto out_dtype = ir::parse_dtype(optional_member<std::string>(j, "out_dtype", "f16"));
    if (!dtype || !out_dtype) return error(ErrorCode::kParse, "candidate " + c.id + ": unknown dtype");
    c.match.dtype = *dtype;
    c.match.out_dtype = *out_dtype;
    c.fallback = optional_member(j, "fallback", false);
    c.source_class = optional_member<std::string>(j, "source_class", "generated");
    c.workspace_bytes_per_token = optional_member(j, "workspace_bytes_per_token", int64_t{0});
    c.workspace_bytes_fixed = optional_member(j, "workspace_bytes_fixed", int64_t{0});
    for (const auto& launch : required_array(j, "launches")) {
      AC_ASSIGN_OR_RETURN(plan::Launch l, launch_from_json(launch));
      c.launches.push_back(std::move(l));
    }
    if (c.launches.empty()) return error(ErrorCode::kParse, "candidate " + c.id + " has no launches");
    return c;
  } catch (const std::exception& e) {  // json::exception, or a shape check above
    return error(ErrorCode::kParse, std::string("candidate record: ") + e.what());
  }
}

Expected<ArtifactRecord> parse_artifact_record(const json& meta, const std::string& where) {
  if (!meta.is_object()) return error(ErrorCode::kParse, where + ": not a JSON object (" + meta.type_name() + ")");
  std::string context = "the document";
  try {
    auto record = parse_members(meta, context);
    if (!record) return record.status().with_context(where);
    return record;
  } catch (const std::exception& e) {  // json::exception, or a shape check above
    return error(ErrorCode::kParse, where + ": " + context + ": " + e.what());
  }
}

Expected<ArtifactRecord> parse_artifact_text(const std::string& text, const std::string& where) {
  const json meta = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded()) return error(ErrorCode::kParse, where + ": not valid JSON (" + std::to_string(text.size()) + " bytes)");
  return parse_artifact_record(meta, where);
}

Expected<ArtifactRecord> read_artifact_record(const fs::path& dir) {
  const fs::path path = dir / "metadata.json";
  auto text = support::read_file_bytes(path);
  if (!text) {
    if (text.status().code() == ErrorCode::kNotFound) return error(ErrorCode::kNotFound, path.string() + ": no artifact here (metadata.json missing)");
    return text.status();
  }
  AC_ASSIGN_OR_RETURN(ArtifactRecord record, parse_artifact_text(*text, path.string()));
  const bool has_ablation = std::any_of(record.files.begin(), record.files.end(), [](const FileEntry& f) { return f.path == "ablation.json"; });
  if (has_ablation) {
    // The table is for the summary only: a damaged ablation.json is caught by verify_artifact_files.
    auto ablation_text = support::read_file_bytes(dir / "ablation.json");
    const json ablation = ablation_text ? json::parse(*ablation_text, nullptr, false) : json();
    if (ablation.is_object() && ablation.contains("table") && ablation["table"].is_string()) record.ablation_table = ablation["table"].get<std::string>();
  }
  return record;
}

Expected<std::string> artifact_format_of(const fs::path& dir) {
  AC_ASSIGN_OR_RETURN(std::string text, support::read_file_bytes(dir / "metadata.json"));
  const json meta = json::parse(text, nullptr, false);
  if (meta.is_discarded()) return error(ErrorCode::kParse, "it is not valid JSON");
  if (!meta.is_object()) return error(ErrorCode::kParse, std::string("it is a JSON ") + meta.type_name() + ", not an object");
  const auto format = meta.find("format");
  if (format == meta.end() || !format->is_string()) return error(ErrorCode::kParse, "it has no format string");
  const std::string value = format->get<std::string>();
  if (value.rfind(kArtifactFormatFamily, 0) != 0) return error(ErrorCode::kParse, "its format is '" + value + "'");
  return value;
}

std::vector<RuntimeKernelSpec> runtime_kernels_for(bool generates, bool collectives, bool batched) {
  std::vector<RuntimeKernelSpec> kernels;
  if (generates) kernels.push_back(kSamplerKernel);
  if (collectives) kernels.push_back(kPeerAllReduceKernel);
  if (batched) kernels.push_back(kRowArgmaxKernel);
  return kernels;
}

Status check_runtime_kernels(const ArtifactRecord& record) {
  for (const RuntimeKernelSpec& spec : runtime_kernels_for(record.functions.count("decode") > 0))
    if (!record.runtime_kernels.count(spec.role))
      return error(ErrorCode::kNotFound, std::string("it lists no ") + spec.role + " kernel (" + spec.kernel +
                                             "): it was compiled before the runtime's kernels shipped in the artifact");
  return Status::ok();
}

Status check_file_bytes(const FileEntry& file, std::string_view bytes) {
  if (bytes.size() != file.bytes)
    return error(ErrorCode::kMismatch, file.path + " is " + std::to_string(bytes.size()) + " bytes, metadata.json records " + std::to_string(file.bytes));
  if (support::sha256_hex(bytes) != file.sha256) return error(ErrorCode::kMismatch, file.path + " has changed since it was written (its SHA-256 differs)");
  return Status::ok();
}

Status verify_artifact_files(const fs::path& dir, const ArtifactRecord& record) {
  for (const FileEntry& file : record.files) {
    std::error_code ec;
    if (!fs::is_regular_file(fs::symlink_status(dir / file.path, ec)))
      return error(ErrorCode::kMismatch, file.path + " is missing (metadata.json lists it)");
    auto content = support::read_file_bytes(dir / file.path);
    if (!content) return error(ErrorCode::kMismatch, content.status().message());
    AC_TRY(check_file_bytes(file, *content));
  }
  return Status::ok();
}

}  // namespace agentcompile::emit
