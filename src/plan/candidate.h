// Candidate records: one way to compute one unique region, as plain data (tinygrad style). The
// planner produces them, the advisor may reorder them, codegen renders them, tune admits and times
// them, emit writes them down, and the runtime launches the selected one.
#pragma once

#include <cstdint>
#include <map>
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

// What a template family learned when it matched a region: the mapping of its roles to the
// region's interface slots ("in0", "out1", "w2", "state0"), integer facts (sizes) and a variant.
struct Match {
  std::string variant;
  std::map<std::string, std::string> roles;
  std::map<std::string, int64_t> facts;
  ir::DType dtype = ir::DType::kF16;
  ir::DType out_dtype = ir::DType::kF16;
};

using ParamSet = std::map<std::string, int64_t>;

struct Candidate {
  std::string id;             // "c0", "c1", ... in the region's heuristic order
  std::string family;         // template family: gemv, rmsnorm, rope_kv, attention_decode, cublas_gemm, ...
  std::string template_file;  // header under src/kernels that owns the code ("" for library calls)
  std::string fusion;         // full | partial | none
  Match match;
  ParamSet params;            // schedule, memory and parallelism choices
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

}  // namespace agentcompile::plan
