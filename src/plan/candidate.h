// Candidate records: one way to compute one unique region, as plain data (tinygrad style). The
// planner produces them, the advisor may reorder them, codegen renders them, tune admits and times
// them, emit writes them down, and the runtime launches the selected one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace agentcompile::plan {

// A grid extent that may depend on the token count: ceil((per_token * T + fixed) / divisor).
struct Extent {
  int64_t per_token = 0;
  int64_t fixed = 1;
  int64_t divisor = 1;
  int64_t at(int64_t tokens) const { return (per_token * tokens + fixed + divisor - 1) / divisor; }
};

// One kernel launch of a candidate. Multi-launch candidates (split-K / split-KV with a combine
// pass, partially fused or unfused plans) list their launches in order.
struct Launch {
  std::string kernel;  // the __global__ symbol, extern "C"; for library launches, the library call
  Extent grid_x, grid_y, grid_z;
  int block_x = 128;
  int64_t shared_bytes = 0;
  bool library = false;  // a cuBLAS/cuBLASLt call run by host code, not a generated kernel
  // For library launches, what to call and on which slots, e.g. {"op": "gemm", "a": "in0", "b": "w1",
  // "c": "out0" or "workspace:<byte offset per token>", "m": "T", "n": "6144", "k": "2048", "c_dtype": "f32"}.
  std::map<std::string, std::string> library_args;
};

// The serialized view of what a template family matched in a region (metadata.json's "variant",
// "roles", "facts", "dtype" and "out_dtype"; the tuning database and the advisor read it too): the
// mapping of its roles to the region's interface slots ("in0", "out1", "w2", "state0"), integer facts
// (sizes) and a variant. Each family writes it from its typed record (FamilyConfig::match_view).
struct Match {
  std::string variant;
  std::map<std::string, std::string> roles;
  std::map<std::string, int64_t> facts;
  ir::DType dtype = ir::DType::kF16;
  ir::DType out_dtype = ir::DType::kF16;
};

using ParamSet = std::map<std::string, int64_t>;

// A candidate's configuration: its family's own typed record (plan/families/<family>.h: GemvConfig,
// RopeKvConfig, ...), what the family matched in the region and the choice's parameters. The family
// builds candidates from it and its renderer reads it; no string map passes between them. The views
// are the candidate's serialized form; a family spells its key names there and nowhere else.
struct FamilyConfig {
  virtual ~FamilyConfig() = default;
  virtual Match match_view() const = 0;
  virtual ParamSet params_view() const = 0;
  virtual bool fallback() const = 0;  // the family's conservative choice (its params_view says "fallback": 1)
};

struct Candidate {
  std::string id;             // "c0", "c1", ... in the region's heuristic order
  std::string family;         // template family: gemv, rmsnorm, rope_kv, attention_decode, cublas_gemm, ...
  std::string template_file;  // header under src/kernels that owns the code ("" for library calls)
  std::string fusion;         // full | partial | none
  Match match;                // the serialized views of `config`, or as read back from metadata.json
  ParamSet params;            // schedule, memory and parallelism choices
  // The typed record the family's renderer reads; null for a candidate read back from metadata.json,
  // which the runtime only launches.
  std::shared_ptr<const FamilyConfig> config;
  std::vector<Launch> launches;
  int64_t workspace_bytes_per_token = 0;  // scratch the launches share: per_token * T + fixed
  int64_t workspace_bytes_fixed = 0;
  double score = 0;           // deterministic heuristic rank (higher first)
  bool fallback = false;      // the library or plain reference candidate that is always present
  std::string source_class;   // "generated" | "library"
  std::vector<std::string> notes;  // why the planner ranked it where it did
  std::string form;           // the family's way of computing the region, if it has several

  std::string spelled_name;   // the family's name for this choice, spelling every parameter

  std::string name() const { return spelled_name.empty() ? id : spelled_name; }
};

// The candidate's configuration as `Config` (its family's record), or null: a candidate read back
// from metadata.json, or another family's.
template <class Config>
const Config* config_as(const Candidate& candidate) {
  return dynamic_cast<const Config*>(candidate.config.get());
}

}  // namespace agentcompile::plan
