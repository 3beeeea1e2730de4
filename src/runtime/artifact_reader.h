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

#include "agentcompile/status.h"
#include "emit/artifact_record.h"
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
};

// Reads `dir`: metadata.json (through emit's reader) and the cubin of every selected kernel. Errors
// name what is missing.
Expected<LoadedArtifact> read_artifact(const std::filesystem::path& dir);

}  // namespace agentcompile::runtime
