// metadata.json back into launchable records.
#include "runtime/artifact_reader.h"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace agentcompile::runtime {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

Expected<plan::Extent> extent_from_json(const json& j) {
  if (!j.is_object()) return error(ErrorCode::kParse, "a launch grid extent is not an object");
  return plan::Extent{j.value("per_token", int64_t{0}), j.value("fixed", int64_t{1}), j.value("divisor", int64_t{1})};
}

Expected<plan::Launch> launch_from_json(const json& j) {
  plan::Launch launch;
  launch.kernel = j.value("kernel", "");
  if (launch.kernel.empty()) return error(ErrorCode::kParse, "a launch has no kernel name");
  const json& grid = j.at("grid");
  if (!grid.is_array() || grid.size() != 3) return error(ErrorCode::kParse, "launch " + launch.kernel + ": grid is not 3 extents");
  AC_ASSIGN_OR_RETURN(launch.grid_x, extent_from_json(grid[0]));
  AC_ASSIGN_OR_RETURN(launch.grid_y, extent_from_json(grid[1]));
  AC_ASSIGN_OR_RETURN(launch.grid_z, extent_from_json(grid[2]));
  if (launch.grid_x.divisor <= 0 || launch.grid_y.divisor <= 0 || launch.grid_z.divisor <= 0)
    return error(ErrorCode::kParse, "launch " + launch.kernel + ": a grid divisor is not positive");
  launch.block_x = j.value("block", 0);
  if (launch.block_x <= 0 || launch.block_x > 1024)
    return error(ErrorCode::kParse, "launch " + launch.kernel + ": block size " + std::to_string(launch.block_x) + " is not in 1..1024");
  launch.shared_bytes = j.value("shared_bytes", int64_t{0});
  launch.library = j.value("library", false);
  if (j.contains("library_args")) launch.library_args = j["library_args"].get<std::map<std::string, std::string>>();
  return launch;
}

Expected<std::vector<char>> read_binary(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(ErrorCode::kNotFound, path.string() + ": cannot open");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return error(ErrorCode::kParse, path.string() + ": empty cubin");
  return bytes;
}

}  // namespace

Expected<plan::Candidate> candidate_from_json(const json& j) {
  try {
    plan::Candidate c;
    c.id = j.at("id").get<std::string>();
    c.spelled_name = j.value("name", c.id);
    c.family = j.value("family", "");
    c.template_file = j.value("template", "");
    c.fusion = j.value("fusion", "");
    c.params = j.value("params", plan::ParamSet{});
    c.match.variant = j.value("variant", "");
    c.match.roles = j.value("roles", std::map<std::string, std::string>{});
    c.match.facts = j.value("facts", std::map<std::string, int64_t>{});
    const auto dtype = ir::parse_dtype(j.value("dtype", "f16"));
    const auto out_dtype = ir::parse_dtype(j.value("out_dtype", "f16"));
    if (!dtype || !out_dtype) return error(ErrorCode::kParse, "candidate " + c.id + ": unknown dtype");
    c.match.dtype = *dtype;
    c.match.out_dtype = *out_dtype;
    c.fallback = j.value("fallback", false);
    c.source_class = j.value("source_class", "generated");
    c.workspace_bytes_per_token = j.value("workspace_bytes_per_token", int64_t{0});
    c.workspace_bytes_fixed = j.value("workspace_bytes_fixed", int64_t{0});
    for (const auto& launch : j.at("launches")) {
      AC_ASSIGN_OR_RETURN(plan::Launch l, launch_from_json(launch));
      c.launches.push_back(std::move(l));
    }
    if (c.launches.empty()) return error(ErrorCode::kParse, "candidate " + c.id + " has no launches");
    return c;
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, std::string("candidate record: ") + e.what());
  }
}

Expected<const BucketRecord*> FunctionRecord::bucket_for(int64_t tokens, int64_t context) const {
  for (const auto& b : buckets)
    if (b.holds(tokens, context)) return &b;
  std::string ranges;
  for (const auto& b : buckets) ranges += (ranges.empty() ? "" : ", ") + b.name;
  return error(ErrorCode::kInvalidArgument, "function " + name + " has no bucket for " + std::to_string(tokens) + " tokens at a context of " +
                                                std::to_string(context) + " (buckets: " + ranges + ")");
}

Expected<LoadedArtifact> read_artifact(const fs::path& dir) {
  const fs::path meta_path = dir / "metadata.json";
  std::ifstream in(meta_path);
  if (!in) return error(ErrorCode::kNotFound, meta_path.string() + ": no artifact here (metadata.json missing)");
  LoadedArtifact a;
  a.dir = dir;
  a.metadata = json::parse(in, nullptr, false);
  if (a.metadata.is_discarded() || !a.metadata.is_object()) return error(ErrorCode::kParse, meta_path.string() + ": invalid JSON");
  const json& m = a.metadata;
  if (m.value("format", "") != "agentcompile-artifact/1")
    return error(ErrorCode::kUnsupported, meta_path.string() + ": unknown artifact format '" + m.value("format", "") + "'");
  try {
    a.key = m.value("key", "");
    a.device_arch = m.at("device").value("arch", "");
    a.device_name = m.at("device").value("name", "");
    a.gpu_used = m.value("gpu_used", false);

    // Regions: only the selected candidates are kept, with their cubins.
    for (const auto& r : m.at("regions")) {
      RegionRecord region;
      region.id = r.at("id").get<std::string>();
      region.label = r.value("label", "");
      std::map<std::string, size_t> kernel_of_candidate;
      for (const auto& s : r.at("selection")) {
        const std::string bucket = s.at("bucket").get<std::string>();
        if (s.at("candidate").is_null()) continue;  // reported when a site of this region runs at this bucket
        const std::string id = s["candidate"].get<std::string>();
        auto found = kernel_of_candidate.find(id);
        if (found == kernel_of_candidate.end()) {
          const json* record = nullptr;
          for (const auto& c : r.at("candidates"))
            if (c.value("id", "") == id) record = &c;
          if (!record) return error(ErrorCode::kParse, meta_path.string() + ": region " + region.id + " selects " + id + ", which it does not list");
          AC_ASSIGN_OR_RETURN(plan::Candidate candidate, candidate_from_json(*record));
          SelectedKernel kernel{std::move(candidate), {}};
          const bool generated = std::any_of(kernel.candidate.launches.begin(), kernel.candidate.launches.end(),
                                             [](const plan::Launch& l) { return !l.library; });
          if (generated) {
            const fs::path cubin = dir / "cubin" / (kernel.candidate.name() + ".cubin");
            auto bytes = read_binary(cubin);
            if (!bytes)
              return error(ErrorCode::kNotFound, "the artifact " + dir.string() + " lacks the kernel selected for region " + region.id +
                                                     " (bucket " + bucket + "): " + bytes.status().message() +
                                                     "; recompile with `agentcompile compile --force`");
            kernel.cubin = std::move(*bytes);
          }
          found = kernel_of_candidate.emplace(id, region.kernels.size()).first;
          region.kernels.push_back(std::move(kernel));
        }
        region.selection[bucket] = found->second;
      }
      a.regions.emplace(region.id, std::move(region));
    }

    for (const auto& [name, f] : m.at("functions").items()) {
      FunctionRecord function;
      function.name = name;
      for (const auto& b : f.at("buckets"))
        function.buckets.push_back({b.at("name").get<std::string>(), b.at("min_tokens").get<int64_t>(), b.at("max_tokens").get<int64_t>(),
                                    b.value("min_context", int64_t{0}), b.value("max_context", int64_t{0})});
      for (const auto& s : f.at("sites")) {
        SiteRecord site;
        site.site = s.at("site").get<int>();
        site.region = s.at("region").get<std::string>();
        site.inputs = s.at("inputs").get<std::vector<ir::ValueId>>();
        site.outputs = s.at("outputs").get<std::vector<ir::ValueId>>();
        site.params = s.at("params").get<std::vector<std::string>>();
        site.states = s.at("states").get<std::vector<std::string>>();
        if (!a.regions.count(site.region))
          return error(ErrorCode::kParse, meta_path.string() + ": site " + std::to_string(site.site) + " of " + name +
                                              " refers to unknown region " + site.region);
        function.sites.push_back(std::move(site));
      }
      a.functions.emplace(name, std::move(function));
    }
  } catch (const json::exception& e) {
    return error(ErrorCode::kParse, meta_path.string() + ": " + e.what());
  }
  if (a.functions.empty()) return error(ErrorCode::kParse, meta_path.string() + ": the artifact has no functions");
  return a;
}

}  // namespace agentcompile::runtime
