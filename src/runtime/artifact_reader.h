// Reading a compiled artifact back for execution: the selected candidate of every region site per
// bucket (from metadata.json, parsed by emit/artifact_record.h) and the cubins of those kernels.
//
// Everything the runtime launches comes from here: a region site without a selected kernel, a
// selected kernel whose cubin is missing, or metadata that does not describe the module it claims
// to are errors that name the region, bucket and file. Nothing falls back to a kernel that was not
// selected.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "agentcompile/engine.h"
#include "agentcompile/status.h"
#include "emit/artifact_record.h"
#include "frontend/model_config.h"
#include "plan/candidate.h"

namespace agentcompile::runtime {

// The artifact's functions, buckets and sites, as emit's reader gives them.
using emit::BucketRecord;
using emit::FunctionRecord;
using emit::SiteRecord;

struct SelectedKernel {
  plan::Candidate candidate;          // launches, workspace and match, as the compiler planned them
  std::vector<char> cubin;            // empty for library-only candidates
};

struct RegionRecord {
  std::string id;
  std::string label;
  // Per bucket name: index into `kernels`.
  std::map<std::string, size_t> selection;
  std::vector<SelectedKernel> kernels;
  // Per bucket name: why the compiler selected what it did (or nothing).
  std::map<std::string, std::string> reasons;
};

struct LoadedArtifact {
  std::filesystem::path dir;
  std::string key;
  std::string device_arch;            // e.g. sm_90a
  std::string device_name;
  bool gpu_used = false;              // kernels were validated and timed (false: compile-only artifact)
  std::map<std::string, FunctionRecord> functions;
  std::map<std::string, RegionRecord> regions;
  // The runtime's own kernels by role ("sampler": emit::kSamplerKernel), compiled with the regions'.
  std::map<std::string, std::vector<char>> runtime_cubins;
};

// Reads `dir`: metadata.json (through emit's reader), the cubin of every selected kernel and of every
// runtime kernel. Errors name what is missing; an artifact compiled before the runtime's kernels
// shipped in artifacts is one to compile again, and the error says so.
Expected<LoadedArtifact> read_artifact(const std::filesystem::path& dir);

// The artifact a model runs from, never compiled here: `options.artifact`, or else the model's own
// artifact in the cache (emit/artifact_fit.h), when it fits this model (`config`, `ir_text`) on a GPU
// of `arch`; otherwise kMismatch saying why and how to compile it. Compile on first use is the layer
// above (include/agentcompile/first_use.h).
Expected<LoadedArtifact> load_fitting_artifact(const EngineOptions& options, const frontend::ModelConfig& config, const std::string& ir_text,
                                               const std::string& arch);

}  // namespace agentcompile::runtime
