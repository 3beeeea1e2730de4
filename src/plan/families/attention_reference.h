// The reference attention family's own question: why can it not implement a region? Its match
// answers yes or no; this says why not, so tests and reports can name the reason.
#pragma once

#include <string>

#include "plan/template_family.h"

namespace agentcompile::plan {

// Largest head dimension the reference kernel takes (compiled and tested up to here; at 512 its
// tile is 8 keys of fp32 K and V in 48 KB of static shared memory).
constexpr int64_t kAttentionReferenceMaxHeadDim = 512;

// "" when attention_reference implements the region, otherwise the reason it does not, e.g.
// "head_dim 640 is outside 1..512, ..." or "i32 attention: the reference kernel takes f32, f16 and bf16 only".
std::string attention_reference_rejection(const RegionContext& ctx);

// A decode region that opens with its token's QK-norm / RoPE / KV append (attention_prologue.h) is
// two launches in this family: the rope_kv kernel, which rotates the query into the workspace and
// appends the key and value row, then the reference attention reading the query from there.
// The rope_kv candidate of the first launch (named after `reference`'s first launch):
Candidate attention_reference_prologue(const Candidate& reference);

}  // namespace agentcompile::plan
