// Region formation: splits a function into regions, the units the compiler generates kernels for.
//
// Nodes are taken in their (topological) order and cut into contiguous segments, so every region is
// convex: no path leaves a region and re-enters it. The rules (DESIGN.md, "analyze"):
//   - weight nodes and the other sources (constant, arange) belong to the region of their consumer,
//     which computes or reads them itself; layout-only nodes (reshape, view, a slice along the
//     outermost axis, broadcast) are not computed: they become boundary metadata of the regions that
//     read through them. A broadcast that repeats data is never bound as a buffer: the region reads
//     the broadcast's operand and broadcasts it itself. Layout ops that move data (transpose,
//     concat, flip, an inner slice) are copy regions of their own, except a transpose of the last two
//     axes that only matmuls read: it joins their region as an operand layout (a transposed GEMM
//     operand, no copy).
//   - matmuls form their own region; consecutive linears that read the same input fuse horizontally
//     (fused QKV, fused gate/up); the region then takes pointwise epilogues of the matmul's shape
//     (activation, gating multiply, residual add, cast, ...).
//   - a norm prologue: an RMSNorm of one static token whose only readers are the linears of the
//     next matmul region joins that region (the decode GEMV normalizes the row it stages anyway);
//     float casts around it (a graph that normalizes in f32) join with it.
//   - a residual-norm prologue (Gemma's sandwich norms at one token of 16-bit floats): when the
//     region before such a norm prologue is a post-norm and its residual add, h = residual +
//     rmsnorm(a) (float casts, one RMSNorm and one add, each reading the one before), and the
//     prologue normalizes h, both join the matmul region. Its kernel computes h from a and the
//     residual, writes h (the next residual add reads it: a region output) and normalizes it again
//     for the linears; a decode step loses a launch per sandwich norm.
//   - consecutive pointwise, norm, rope, softmax, reduction and scan nodes merge into one fusion
//     region around at most one row op (a norm, softmax, reduction or scan over an axis): a second
//     row op starts a new region (independent RMSNorms excepted: a QK-norm pair shares its RoPE
//     region), and so does any node that reads what a reduction produced (its shape is another),
//     and a node that reads nothing of the region and iterates over a shape that does not
//     broadcast into the region's (an independent computation: one region computes one iteration
//     space; regions with norms, RoPE or side effects excepted).
//     A float cast read only by row ops goes with them: after a post-norm and the residual add, the
//     next pre-norm starts its region with the cast before it (Gemma's sandwich norms), so the norm
//     prologue rule may take both.
//   - a side effect (kv_append, index_copy) may close a region: once one is in, only further side
//     effects may join, and they keep their order; an index_copy stands alone. Attention and gathers
//     (embedding, index_select, gather) are regions of their own, and so is every collective
//     (all_reduce, all_gather of a sharded module: a library call or a peer-memory kernel of its own,
//     which every rank issues in the same order, so nothing joins it on either side).
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

enum class RegionKind { kGather, kMatmul, kFusion, kAttention, kCopy, kCollective };
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
  std::vector<int> region_of_node;  // -1 for source (weight, constant, arange) and view nodes
};

// All on by default; all off is the unfused ablation.
struct RegionOptions {
  bool norm_prologue = true;       // off: every RMSNorm stays a fusion region of its own
  bool residual_norm_prologue = true;  // off (or norm_prologue off): a post-norm + residual add stays a fusion region
  bool matmul_fusion = true;       // off: every linear is a region of its own, its epilogue ops a fusion region
  bool attention_prologue = true;  // off: QK-norm / RoPE / KV append stay a fusion region before attention
};

RegionPartition form_regions(const ir::Module& module, const ir::Function& function, const RegionOptions& options = {});

// True for layout nodes that only reinterpret or index a buffer (no data movement).
bool is_view_node(const ir::Node& node);
// True for nodes no region computes: weights (bound as buffers), constants and aranges (computed by
// the kernels that read them).
bool is_source_node(const ir::Node& node);
// The value a region binds for `operand`: the operand itself, or, when it is a broadcast that
// repeats data, the broadcast's operand (the region's kernel broadcasts it).
ir::ValueId bound_value(const ir::Function& function, ir::ValueId operand);
// The ops that compute over a whole axis (norms, softmax, reductions, scans): a fusion region holds
// at most one of them (several independent RMSNorms excepted).
bool is_row_op(ir::OpKind op);

}  // namespace agentcompile::analysis
