// The tuning database: keys, files, and candidates' results in it (see tuning_db.h).
#include "tune/tuning_db.h"

#include "support/durable_files.h"
#include "support/file_lock.h"
#include "support/sha256.h"
#include "tune/admission_steps.h"

namespace agentcompile::tune {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string hash_of(const json& key) { return support::sha256_hex(key.dump()); }

json bindings_json(const RegionBindings& b) { return {{"T", b.T}, {"L", b.L}, {"pos", b.pos}}; }

json validation_key(const RegionTuningKey& key, const std::string& fingerprint) {
  json distributions = json::array();
  for (Distribution d : key.distributions) distributions.push_back(distribution_name(d));
  return {{"kind", "validation"}, {"candidate", fingerprint}, {"at", bindings_json(key.validation)}, {"seeds", key.seeds},
          {"distributions", distributions}};
}

json timing_key(const RegionTuningKey& key, const std::string& fingerprint, const RegionBindings& size) {
  return {{"kind", "timing"}, {"candidate", fingerprint}, {"at", bindings_json(size)}, {"warmup", key.warmup},
          {"repetitions", key.repetitions}, {"screen_samples", key.screen_samples}};
}

// Why a validation value cannot be used ("" when it can).
std::string validation_problem(const json& v) {
  if (!v.is_object()) return "not an object";
  if (!v.contains("validated") || !v["validated"].is_boolean()) return "no validated flag";
  for (const char* field : {"max_abs_error", "max_rel_error"})
    if (v.contains(field) && !v[field].is_number()) return std::string(field) + " is not a number";
  if (v.contains("cases") && !v["cases"].is_number_integer()) return "cases is not an integer";
  if (v.contains("rejection") && !v["rejection"].is_string()) return "rejection is not a string";
  return "";
}

// Why an entry cannot be used ("" when it can): its key must hash to its name, and the values of the
// kinds this file reads back must have their shape (anything else is the caller's to check).
std::string entry_problem(const std::string& hash, const json& entry) {
  if (!entry.is_object() || !entry.contains("key") || !entry.contains("value")) return "not a {key, value} object";
  if (hash_of(entry["key"]) != hash) return "its key does not hash to its name";
  const json& key = entry["key"];
  const std::string kind = key.is_object() && key.contains("kind") && key["kind"].is_string() ? key["kind"].get<std::string>() : "";
  if (kind == "validation") return validation_problem(entry["value"]);
  if (kind == "timing") {
    auto timing = timing_from_json(entry["value"]);
    return timing ? "" : timing.status().message();
  }
  return "";
}

// Reads the file at `path` into entries; what cannot be used is skipped and said in `warnings`.
// Returns false when the file exists but cannot be used at all.
bool read_entries(const fs::path& path, const json& context, std::map<std::string, json>& entries, std::vector<std::string>& warnings) {
  auto bytes = support::read_file_bytes(path);
  if (!bytes) {
    if (bytes.status().code() != ErrorCode::kNotFound) warnings.push_back("tuning database: " + bytes.status().message() + "; ignored");
    return bytes.status().code() == ErrorCode::kNotFound;
  }
  const json doc = json::parse(*bytes, nullptr, false);
  auto refuse = [&](const std::string& why) {
    warnings.push_back("tuning database: " + path.string() + " " + why + "; ignored (the next store rewrites it)");
    return false;
  };
  if (doc.is_discarded() || !doc.is_object()) return refuse("is not a JSON object");
  if (doc.value("format", json()) != kTuningDbFormat) return refuse("is not of format " + std::string(kTuningDbFormat));
  if (doc.value("context", json()) != context) return refuse("belongs to another region context");
  if (!doc.contains("entries") || !doc["entries"].is_object()) return refuse("has no entries object");
  for (const auto& [hash, entry] : doc["entries"].items()) {
    if (const std::string why = entry_problem(hash, entry); !why.empty()) {
      warnings.push_back("tuning database: " + path.string() + ": entry " + hash.substr(0, 16) + " ignored: " + why);
      continue;
    }
    entries[hash] = entry;
  }
  return true;
}

}  // namespace

std::string candidate_fingerprint(const plan::Candidate& c, const codegen::CompileResult& compiled) {
  json launches = json::array();
  auto extent = [](const plan::Extent& e) { return json{e.per_token, e.fixed, e.divisor}; };
  for (const auto& l : c.launches)
    launches.push_back({{"kernel", l.kernel}, {"grid", {extent(l.grid_x), extent(l.grid_y), extent(l.grid_z)}}, {"block", l.block_x},
                        {"shared_bytes", l.shared_bytes}, {"library", l.library}, {"library_args", l.library_args}});
  const json record = {{"name", c.name()}, {"family", c.family}, {"template", c.template_file}, {"params", c.params},
                       {"roles", c.match.roles}, {"facts", c.match.facts}, {"variant", c.match.variant},
                       {"dtype", ir::dtype_name(c.match.dtype)}, {"out_dtype", ir::dtype_name(c.match.out_dtype)},
                       {"launches", launches}, {"workspace", {c.workspace_bytes_per_token, c.workspace_bytes_fixed}},
                       {"compile_key", compiled.key}};
  return hash_of(record);
}

std::optional<json> TuningFile::get(const json& key) const {
  const auto it = entries_.find(hash_of(key));
  if (it == entries_.end()) return std::nullopt;
  return it->second.at("value");
}

void TuningFile::put(const json& key, json value) {
  const std::string hash = hash_of(key);
  json entry = {{"key", key}, {"value", std::move(value)}};
  entries_[hash] = entry;
  added_[hash] = std::move(entry);
}

fs::path TuningDb::path_of(const json& context) const { return dir_ / (hash_of(context) + ".json"); }

TuningFile TuningDb::load(const json& context, std::vector<std::string>& warnings) const {
  TuningFile file(context);
  read_entries(path_of(context), context, file.entries_, warnings);
  return file;
}

Status TuningDb::store(const TuningFile& file) const {
  if (!file.changed()) return Status::ok();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return error(ErrorCode::kIo, dir_.string() + ": cannot create the tuning database: " + ec.message());
  // Compiles that store into one file take turns; each merges into what the one before wrote.
  AC_ASSIGN_OR_RETURN(support::FileLock lock, support::FileLock::acquire(dir_ / ".lock", support::FileLock::Mode::kExclusive));
  const fs::path path = path_of(file.context_);
  std::map<std::string, json> entries;
  std::vector<std::string> ignored;  // a file that cannot be read is replaced by what this compile knows
  read_entries(path, file.context_, entries, ignored);
  for (const auto& [hash, entry] : file.added_) entries[hash] = entry;
  json doc = {{"format", kTuningDbFormat}, {"context", file.context_}, {"entries", json::object()}};
  for (auto& [hash, entry] : entries) doc["entries"][hash] = std::move(entry);
  return support::replace_file_atomically(path, doc.dump());
}

std::optional<CandidateResult> find_result(const TuningFile& file, const RegionTuningKey& key, const plan::Candidate& candidate,
                                           const std::string& fingerprint, const std::vector<RegionBindings>& sizes) {
  const auto validation = file.get(validation_key(key, fingerprint));
  if (!validation) return std::nullopt;
  CandidateResult r;
  r.id = candidate.id;
  r.name = candidate.name();
  r.compiled = true;
  r.reused = true;
  r.validated = (*validation)["validated"].get<bool>();  // shapes were checked when the file was read
  r.rejection = validation->value("rejection", "");
  r.max_abs_error = validation->value("max_abs_error", 0.0);
  r.max_rel_error = validation->value("max_rel_error", 0.0);
  r.cases = validation->value("cases", 0);
  if (!r.validated) return r;
  for (const RegionBindings& size : sizes) {
    const auto stored = file.get(timing_key(key, fingerprint, size));
    if (!stored) return std::nullopt;
    auto timing = timing_from_json(*stored);
    if (!timing) return std::nullopt;
    timing->bindings = size;
    r.timings.push_back(*timing);
  }
  if (!r.timings.empty()) {
    r.measured = true;
    r.median_us = r.timings.front().median_us;
    r.p10_us = r.timings.front().p10_us;
    r.p90_us = r.timings.front().p90_us;
  }
  return r;
}

void put_result(TuningFile& file, const RegionTuningKey& key, const std::string& fingerprint, const CandidateResult& r) {
  if (r.reused || r.faulted || !r.compiled) return;
  file.put(validation_key(key, fingerprint), {{"name", r.name}, {"validated", r.validated}, {"rejection", r.rejection},
                                              {"max_abs_error", r.max_abs_error}, {"max_rel_error", r.max_rel_error}, {"cases", r.cases}});
  if (!r.validated) return;
  for (const Timing& t : r.timings) file.put(timing_key(key, fingerprint, t.bindings), timing_json(t));
}

bool stored_timing_stands(const Timing& timing, double best_us, double margin) {
  if (!timing.stopped_early) return true;
  return clearly_behind({timing.fastest_us}, best_us, margin);
}

std::vector<std::optional<CandidateResult>> stored_results(const TuningFile& file, const RegionTuningKey& key,
                                                           const std::vector<plan::Candidate>& candidates,
                                                           const std::vector<std::string>& fingerprints, const std::vector<int>& indices,
                                                           const std::vector<RegionBindings>& sizes,
                                                           const std::vector<CandidateResult>& earlier, double margin, bool retune) {
  std::vector<std::optional<CandidateResult>> stored(indices.size());
  if (retune) return stored;
  for (size_t k = 0; k < indices.size(); ++k) {
    const size_t i = static_cast<size_t>(indices[k]);
    if (i < candidates.size() && i < fingerprints.size()) stored[k] = find_result(file, key, candidates[i], fingerprints[i], sizes);
  }
  // The best full median per size among what this compile knows: the bar early stops are held to.
  std::vector<double> best(sizes.size(), 0.0);
  auto consider = [&](const CandidateResult& r) {
    if (!r.validated) return;
    for (size_t s = 0; s < sizes.size() && s < r.timings.size(); ++s) {
      const Timing& t = r.timings[s];
      if (!t.stopped_early && t.median_us > 0 && (best[s] == 0 || t.median_us < best[s])) best[s] = t.median_us;
    }
  };
  for (const auto& r : earlier) consider(r);
  for (const auto& r : stored)
    if (r) consider(*r);
  for (auto& r : stored) {
    if (!r) continue;
    for (size_t s = 0; s < r->timings.size() && s < best.size(); ++s)
      if (!stored_timing_stands(r->timings[s], best[s], margin)) {
        r.reset();
        break;
      }
  }
  return stored;
}

}  // namespace agentcompile::tune
