// The artifact's record into launchable records: the selected kernels with their cubins.
#include "runtime/artifact_reader.h"

#include <algorithm>

#include "emit/artifact_fit.h"
#include "support/durable_files.h"

namespace agentcompile::runtime {

namespace fs = std::filesystem;

Expected<LoadedArtifact> read_artifact(const fs::path& dir) {
  AC_ASSIGN_OR_RETURN(emit::ArtifactRecord record, emit::read_artifact_record(dir));
  const std::string meta_path = (dir / "metadata.json").string();
  LoadedArtifact a;
  a.dir = dir;
  a.key = record.key;
  a.device_arch = record.device.arch;
  a.device_name = record.device.name;
  a.gpu_used = record.gpu_used;

  // Regions: only the selected candidates are kept, with their cubins.
  for (auto& entry : record.regions) {
    RegionRecord region;
    region.id = entry.id;
    region.label = entry.label;
    std::map<std::string, size_t> kernel_of_candidate;
    for (const auto& s : entry.selections) {
      region.reasons[s.bucket] = s.reason;
      if (!s.candidate) continue;  // reported when a site of this region runs at this bucket
      auto found = kernel_of_candidate.find(*s.candidate);
      if (found == kernel_of_candidate.end()) {
        SelectedKernel kernel{entry.selected.at(*s.candidate), {}};
        const bool generated = std::any_of(kernel.candidate.launches.begin(), kernel.candidate.launches.end(),
                                           [](const plan::Launch& l) { return !l.library; });
        if (generated) {
          const fs::path cubin = dir / "cubin" / (kernel.candidate.name() + ".cubin");
          auto bytes = support::read_file_bytes(cubin);
          if (bytes && bytes->empty()) bytes = error(ErrorCode::kParse, cubin.string() + ": empty cubin");
          if (!bytes)
            return error(ErrorCode::kNotFound, "the artifact " + dir.string() + " lacks the kernel selected for region " + region.id +
                                                   " (bucket " + s.bucket + "): " + bytes.status().message() +
                                                   "; recompile with `agentcompile compile --force`");
          kernel.cubin.assign(bytes->begin(), bytes->end());
        }
        found = kernel_of_candidate.emplace(*s.candidate, region.kernels.size()).first;
        region.kernels.push_back(std::move(kernel));
      }
      region.selection[s.bucket] = found->second;
    }
    a.regions.emplace(region.id, std::move(region));
  }
  // The runtime's own kernels (the sampler), from the same artifact.
  if (const Status kernels = emit::check_runtime_kernels(record); !kernels)
    return error(ErrorCode::kMismatch, "the artifact " + dir.string() + " cannot be run: " + kernels.message() +
                                           "; compile it again (`agentcompile compile MODEL -o " + dir.string() + "`)");
  for (const auto& [role, kernel] : record.runtime_kernels) {
    const fs::path cubin = dir / kernel.cubin;
    auto bytes = support::read_file_bytes(cubin);
    if (bytes && bytes->empty()) bytes = error(ErrorCode::kParse, cubin.string() + ": empty cubin");
    if (!bytes)
      return error(ErrorCode::kNotFound, "the artifact " + dir.string() + " lacks the runtime's " + role + " kernel: " + bytes.status().message() +
                                             "; recompile with `agentcompile compile --force`");
    a.runtime_cubins[role].assign(bytes->begin(), bytes->end());
  }
  a.functions = std::move(record.functions);
  if (a.functions.empty()) return error(ErrorCode::kParse, meta_path + ": the artifact has no functions");
  return a;
}

Expected<LoadedArtifact> load_fitting_artifact(const EngineOptions& options, const frontend::ModelConfig& config, const std::string& ir_text,
                                               const std::string& arch) {
  const fs::path dir = options.artifact.empty() ? emit::default_artifact_dir(options.cache_dir, options.model, config, options.compile)
                                                : options.artifact;
  const std::string why = emit::artifact_incompatibility(dir, config, ir_text, arch);
  if (!why.empty())
    return error(ErrorCode::kMismatch, dir.string() + " cannot run " + options.model.string() + ": " + why +
                                           " (compile it first: agentcompile compile " + options.model.string() + ")");
  return read_artifact(dir);
}

}  // namespace agentcompile::runtime
