// Region summaries: what the planner, the advisor and the reports know about a region, and the
// structural signature under which identical regions (one per layer) are tuned once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/regions.h"
#include "ir/graph.h"

namespace agentcompile::analysis {

// Rule-based semantic categories (the compiler's label vocabulary).
enum class Category {
  kGemm,              // matmul with T > 1
  kGemmEpilogue,      // matmul with T > 1 and fused epilogue or horizontal fusion
  kGemv,              // matmul with one token
  kGemvEpilogue,      // matmul with one token and a norm prologue, fused epilogue or horizontal fusion
  kAttentionPrefill,  // attention over T queries
  kAttentionDecode,   // attention of one query over the cache (or, per-row form, one per sequence over its own rows)
  kRmsNorm,           // rmsnorm, possibly with pointwise ops around it
  kLayerNorm,         // layer_norm, possibly with pointwise ops around it
  kScan,              // cumsum / cumprod along an axis
  kRopeKvAppend,      // rope (+ qk-norm) ending in kv-cache appends
  kSoftmax,
  kReductionPointwise,
  kElementwise,
  kGather,
  kCopy,
  kCollective,  // all_reduce / all_gather over the ranks of a sharded module
};
const char* category_name(Category category);
const std::vector<std::string>& all_category_names();

struct RegionSummary {
  std::string signature;              // canonical text; equal for structurally identical regions
  std::string signature_hash;         // 16 hex digits of FNV-1a over the signature
  std::vector<std::string> op_sequence;
  std::vector<ir::TensorType> inputs, outputs, params;
  ir::DType dtype = ir::DType::kF16;  // activation dtype
  ir::DType accum_dtype = ir::DType::kF32;
  std::vector<std::string> reduction_axes;  // "linear:K=2048", "rmsnorm:last=2048", "attention:L"
  std::string dominant_op;
  std::string access_pattern;  // weight-streaming, row-wise, kv-scan, gather, tiled
  bool depends_on_T = false;
  bool depends_on_L = false;
  double flops = 0;      // at the bindings summarize_region was given
  double bytes = 0;      // fewest bytes moved: inputs + params + outputs (+ KV rows read)
  double intensity = 0;  // flops / bytes
  Category category = Category::kElementwise;
};

RegionSummary summarize_region(const ir::Module& module, const ir::Function& function, const Region& region,
                               const ir::SymbolBindings& bindings);

// One entry per distinct signature of a function, with every site that shares it.
struct UniqueRegion {
  int id = 0;                 // r0, r1, ... in first-site order
  std::string function;
  std::vector<int> sites;     // region indices in the partition
  RegionSummary summary;
};

std::vector<UniqueRegion> unique_regions(const ir::Module& module, const ir::Function& function,
                                         const RegionPartition& partition, const ir::SymbolBindings& bindings);

// Human-readable listing used by golden tests and --dump-ir: one block per unique region.
std::string describe_regions(const ir::Function& function, const RegionPartition& partition,
                             const std::vector<UniqueRegion>& unique);

}  // namespace agentcompile::analysis
