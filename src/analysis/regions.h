// Region formation: splits a function into regions, the units the compiler generates kernels for.
//
// Nodes are taken in their (topological) order and cut into contiguous segments, so every region is
// convex: no path leaves a region and re-enters it. The rules (DESIGN.md, "analyze"):
//   - weight nodes belong to the region of their consumer; layout-only nodes (reshape, view, a slice
//     along the outermost axis, broadcast) are not computed: they become boundary metadata of the
//     regions that read through them. A transpose, which moves data, is a copy region of its own.
//   - matmuls form their own region; consecutive matmuls that read the same input fuse horizontally
//     (fused QKV, fused gate/up); the region then takes simple epilogues: activation (SiLU, GELU),
//     gating multiply, residual add, cast.
//   - a norm prologue: an RMSNorm of one static token whose only readers are the linears of the
//     next matmul region joins that region (the decode GEMV normalizes the row it stages anyway);
//     float casts around it (a graph that normalizes in f32) join with it.
//   - consecutive pointwise, norm, rope, softmax and reduction nodes merge into one fusion region,
//     except that a row op (norm, softmax, reduction) that reads what the region's own row op computed
//     (a post-norm, the residual add, then the next pre-norm: Gemma's sandwich norms) starts a region
//     of its own, with the float cast before it if it reads through one: one row op per row pass, and
//     the norm prologue rule may then take it.
//   - a side effect (kv_append) may close a region: once one is in, only further side effects may
//     join, and they keep their order. Attention and embedding gathers are regions of their own.
//   - an attention prologue: the QK-norm / RoPE / KV-append region of one static token (float casts
//     around the norms included) whose results
//     only the next attention reads (the roped query and the caches it appended to) joins that
//     attention. The one read that crosses the append, the new key and value row, comes from the
//     kernel's own registers: it writes the row and reads only older rows from the cache, so the
//     kernel keeps the order the side effect needs, and a decode step loses a launch per layer.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::analysis {

enum class RegionKind { kGather, kMatmul, kFusion, kAttention, kCopy };
const char* region_kind_name(RegionKind kind);

struct Region {
  int index = 0;
  RegionKind kind = RegionKind::kFusion;
  std::vector<int> nodes;           // compute nodes in execution order
  std::vector<int> view_nodes;      // layout-only nodes the region reads or writes through
  std::vector<ir::ValueId> inputs;  // activations read from outside, as the region sees them (after views)
  std::vector<ir::ValueId> outputs; // values the region defines that are used outside or returned
  std::vector<std::string> params;  // weights read, in first-use order
  std::vector<std::string> states;  // states written (kv_append), in order
  bool has_side_effect = false;
};

struct RegionPartition {
  std::string function;
  std::vector<Region> regions;
  std::vector<int> region_of_node;  // -1 for weight and view nodes
};

// All on by default; all off is the unfused ablation.
struct RegionOptions {
  bool norm_prologue = true;       // off: every RMSNorm stays a fusion region of its own
  bool matmul_fusion = true;       // off: every linear is a region of its own, its epilogue ops a fusion region
  bool attention_prologue = true;  // off: QK-norm / RoPE / KV append stay a fusion region before attention
};

RegionPartition form_regions(const ir::Module& module, const ir::Function& function, const RegionOptions& options = {});

// True for layout nodes that only reinterpret or index a buffer (no data movement).
bool is_view_node(const ir::Node& node);

}  // namespace agentcompile::analysis
