// Reading a compiled artifact back for execution: metadata.json (the contract the emitter wrote),
// the selected candidate of every region site per bucket, and the cubins of those kernels.
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

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "plan/candidate.h"

namespace agentcompile::runtime {

// The calls one selection serves: a range of T, and for decode a range of the context (the keys
// a step's attention reads); max_context 0 means any context.
struct BucketRecord {
  std::string name;
  int64_t min_tokens = 1, max_tokens = 1;
  int64_t min_context = 0, max_context = 0;
  bool holds(int64_t tokens, int64_t context) const {
    return tokens >= min_tokens && tokens <= max_tokens && (max_context == 0 || (context >= min_context && context <= max_context));
  }
};

// One region site of a function: what it reads and writes, in interface-slot order.
struct SiteRecord {
  int site = 0;
  std::string region;                 // unique region id, "decode.r3"
  std::vector<ir::ValueId> inputs, outputs;
  std::vector<std::string> params, states;
};

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
};

struct FunctionRecord {
  std::string name;
  std::vector<BucketRecord> buckets;
  std::vector<SiteRecord> sites;
  // The bucket that holds a call of `tokens` tokens whose attention reads `context` keys, or an
  // error naming the function and the bucket ranges.
  Expected<const BucketRecord*> bucket_for(int64_t tokens, int64_t context) const;
};

struct LoadedArtifact {
  std::filesystem::path dir;
  nlohmann::json metadata;
  std::string key;
  std::string device_arch;            // e.g. sm_90a
  std::string device_name;
  bool gpu_used = false;              // kernels were validated and timed (false: compile-only artifact)
  std::map<std::string, FunctionRecord> functions;
  std::map<std::string, RegionRecord> regions;
};

// Reads `dir`: metadata.json and the cubin of every selected kernel. Errors name what is missing.
Expected<LoadedArtifact> read_artifact(const std::filesystem::path& dir);

// Rebuilds a candidate record from its metadata.json entry (the inverse of the emitter's).
Expected<plan::Candidate> candidate_from_json(const nlohmann::json& j);

}  // namespace agentcompile::runtime
