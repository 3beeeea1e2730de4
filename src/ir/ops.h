// The IR's operations and what each one means.
//
// Semantics (the reference interpreter implements exactly these; shapes use T tokens, H hidden):
//   weight        ()                         -> the module parameter named by attr `name`
//   embedding     (table[V,H], ids i32[T])   -> [T,H]         rows of table
//   linear        (x[...,K], w[N,K], b[N]?)  -> [...,N]       x @ w^T (+ b); w keeps Hugging Face layout
//   matmul        (a[...,M,K], b[...,K,N])   -> [...,M,N]     batch dims must match
//   add sub mul div (a, b)                   -> broadcast(a,b) numpy broadcasting over trailing dims
//   silu exp neg  (x)                        -> x
//   cast          (x)                        -> x with dtype attr `dtype`
//   rmsnorm       (x[...,D], w[D])           -> x * rsqrt(mean(x^2) + eps) * w over the last axis; attr eps
//   rope          (x[T,NH,D], pos i32[])     -> rotary embedding, rotate-half (NeoX/HF) layout; row t sits at
//                                               position pos+t. attrs theta, scaling ("none"|"llama3"),
//                                               factor, low_freq_factor, high_freq_factor, original_max_position
//   reshape view  (x)                        -> attr `shape` (same element count; view never copies)
//   transpose     (x)                        -> attr `perm`
//   slice         (x)                        -> attrs axis, start (negative counts from the end), length
//   broadcast     (x)                        -> attr `shape` (numpy broadcasting of x to it)
//   kv_append     (x[T,KV,D], pos i32[])     -> writes x into rows [pos, pos+T) of the state named by attr
//                                               `state` and returns that cache, [L,KV,D]; a side effect
//   attention     (q[T,NH,D], k[L,KV,D], v[L,KV,D], pos i32[]) -> [T,NH,D]; query t sees keys 0..pos+t
//                                               (causal), head h reads kv head h / (NH/KV) (GQA); attr scale
//   softmax       (x)                        -> stable softmax over attr axis
//   reduce_sum reduce_max reduce_mean (x)    -> attrs axis, keepdim
//   argmax        (x)                        -> i32, attr axis removed
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace agentcompile::ir {

enum class OpKind : uint8_t {
  kWeight,
  kEmbedding,
  kLinear,
  kMatmul,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kSilu,
  kExp,
  kNeg,
  kCast,
  kRmsNorm,
  kRope,
  kReshape,
  kView,
  kTranspose,
  kSlice,
  kBroadcast,
  kKvAppend,
  kAttention,
  kSoftmax,
  kReduceSum,
  kReduceMax,
  kReduceMean,
  kArgmax,
};

enum class OpClass : uint8_t {
  kSource,      // weight
  kGather,      // embedding
  kMatmul,      // linear, matmul
  kPointwise,   // add .. cast
  kNorm,        // rmsnorm
  kRope,
  kLayout,      // reshape, view, transpose, slice, broadcast
  kSideEffect,  // kv_append
  kAttention,
  kSoftmax,
  kReduction,   // reduce_*, argmax
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpClass op_class;
  int min_operands;
  int max_operands;
};

const OpInfo& op_info(OpKind kind);
std::string_view op_name(OpKind kind);
std::optional<OpKind> parse_op(std::string_view name);

inline bool has_side_effect(OpKind kind) { return op_info(kind).op_class == OpClass::kSideEffect; }
inline bool is_layout(OpKind kind) { return op_info(kind).op_class == OpClass::kLayout; }

}  // namespace agentcompile::ir
