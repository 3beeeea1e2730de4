// The IR's operations and what each one means.
//
// Two levels of ops share one graph. Semantic ops (rmsnorm, rope, attention, kv_append, silu, softmax)
// are what the graph builders write and what the kernel families implement. Primitive ops (core ATen's
// vocabulary: pow, rsqrt, sigmoid, concat, where, sdpa, index_copy, ...) are what a graph captured from
// PyTorch is made of; analysis/recognize raises primitive sequences to semantic ops, and what it does
// not raise is compiled as it is (generic elementwise/reduction families, or the reference kernel).
//
// Semantics (the reference interpreter implements exactly these; shapes use T tokens, H hidden, L
// cache rows; "float" means f32/f16/bf16, "int" means i32, "bool" is a 0/1 byte):
//
// Sources
//   weight        ()                         -> the module parameter named by attr `name`
//   constant      ()                         -> a tensor of attr `dtype` and static attr `shape`, filled with
//                                               attr `value` (one number) or attr `values` (every element,
//                                               row-major; a float list). Ints and bools are whole numbers.
//   arange        ()                         -> [length] of attr `dtype` (i32 or a float): start + i * step;
//                                               attrs start, step (numbers), length (a dim: static, T or L)
//   random_uniform ()                        -> f32 of attr `shape` (dims: static, T or L): element i (row-major)
//                                               is a float in [0, 1) that depends only on (attr `seed`, i):
//                                               Philox4x32-10 (src/kernels/random.cuh). The same values in
//                                               every call; a captured module's random draws lower to
//                                               it (dropout: where(random_uniform >= p, x / (1-p), 0))
// Gathers
//   embedding     (table[V,H], ids i32[N])   -> [N,H]         rows of table; an id outside [0, V) is an error.
//                                               A quantized table (ir/quant.h) needs attr dtype, the float
//                                               type of the dequantized rows it returns
//   index_select  (x, idx i32[n])            -> x with dim `axis` replaced by n: x.index_select(axis, idx)
//   gather        (x, idx i32)               -> idx's shape: out[..i..] = x[..idx[..i..] at `axis`..]
//                                               (torch.gather); idx has x's rank, other dims <= x's
// Matmuls
//   linear        (x[...,K], w[N,K], b[N]?)  -> [...,N]       x @ w^T (+ b); w keeps Hugging Face layout and
//                                               may be quantized (ir/quant.h: its rows dequantized exactly as
//                                               the format defines); the result has x's dtype
//   matmul        (a[...,M,K], b[...,K,N])   -> [...,M,N]     equal ranks >= 2, batch dims must match
// Pointwise, binary (equal dtypes; numpy broadcasting over trailing dims, a static 1 stretches)
//   add sub mul div                          -> float or int (int division truncates toward zero)
//   pow maximum minimum                      -> float (pow(x, y) = x^y; maximum/minimum propagate NaN)
//   eq ne lt le gt ge                        -> bool, on float, int or bool operands
//   logical_and logical_or                   -> bool, on bool operands
//   where         (cond bool, a, b)          -> broadcast of the three, a's dtype: cond ? a : b
// Pointwise, unary (the result has x's dtype and shape)
//   silu exp neg log log1p expm1 sqrt rsqrt abs tanh sigmoid relu erf sin cos reciprocal floor ceil
//   round sign                               -> float; round is half-to-even; neg/abs/sign also on int
//   gelu          (x)                        -> float; attr approximate "none" (erf) or "tanh"
//   leaky_relu    (x)                        -> x >= 0 ? x : slope * x; attr slope
//   clamp         (x)                        -> min(max(x, lo), hi); attrs lo and/or hi (each optional)
//   logical_not   (x bool)                   -> bool
//   cast          (x)                        -> x with dtype attr `dtype`; float->int truncates toward zero
//                                               (saturating, NaN -> 0); to bool: x != 0
// Norms and rotary embedding
//   rmsnorm       (x[...,D], w[D])           -> x * rsqrt(mean(x^2) + eps) * w over the last axis; attr eps
//   layer_norm    (x[...,D], w[D]?, b[D]?)   -> (x - mean) * rsqrt(var + eps) (* w) (+ b) over the last axis,
//                                               var the biased variance; attr eps
//   rope          (x[T,NH,D], pos i32[])     -> rotary embedding, rotate-half (NeoX/HF) layout; row t sits at
//                                               position pos+t. The inverse frequencies [D/2] are either given
//                                               by attrs theta, scaling ("none"|"llama3"), factor,
//                                               low_freq_factor, high_freq_factor, original_max_position, or
//                                               listed as attr `inv_freq` (a float list, used as f32). Optional
//                                               attr `scale` multiplies cos and sin (default 1).
//                 (x[T,NH,D], pos i32[T])    -> the per-row form: row t sits at position pos[t]
// Layout
//   reshape view  (x)                        -> attr `shape` (same element count; view never copies)
//   transpose     (x)                        -> attr `perm` (out dim i is x dim perm[i])
//   slice         (x)                        -> attrs axis, start (negative counts from the end), length
//   broadcast     (x)                        -> attr `shape` (numpy broadcasting of x to it)
//   concat        (x0, x1, ...)              -> joined along attr `axis`; equal dtypes, other dims equal
//   flip          (x)                        -> reversed along attr `axis`
// Side effects (each names a module state and returns the whole state after the write)
//   kv_append     (x[T,KV,D], pos i32[])     -> writes x into rows [pos, pos+T) of the state named by attr
//                                               `state`; returns the state, [L,KV,D]
//                 (x[T,KV,D], pos i32[T], base i32[T]) -> the per-row form: row t goes to cache row
//                                               base[t] + pos[t] (each row its own sequence, whose rows
//                                               start at base[t]: a slot of a cache of several; see
//                                               ir/decode_batch.h)
//   index_copy    (src, idx i32[n])          -> writes src's slices into the state named by attr `state` at
//                                               the positions idx along attr `axis`; src is the state's
//                                               shape with that dim replaced by n; returns the state
// Attention
//   attention     (q[T,NH,D], k[L,KV,D], v[L,KV,D], pos i32[]) -> [T,NH,D]; query t sees keys 0..pos+t
//                                               (causal), head h reads kv head h / (NH/KV) (GQA); attr scale;
//                                               optional attr window (w > 0: keys pos+t-w+1 .. pos+t only)
//                 (q, k, v, pos i32[T], base i32[T]) -> the per-row form: query t sees its own sequence's
//                                               keys, rows base[t] .. base[t]+pos[t] (with a window, the last w
//                                               of them); k and v must come from kv_appends of the per-row
//                                               form with the same pos and base (the verifier checks)
//   sdpa          (q[...,NH,S,D], k[...,KV,S2,D], v[...,KV,S2,Dv], mask?) -> [...,NH,S,Dv]: torch's
//                                               scaled_dot_product_attention: softmax(scale * q k^T + bias) v
//                                               where a bool mask keeps keys where true (bias 0, else -inf)
//                                               and a float mask is added; attrs scale, causal (0/1: query
//                                               i sees keys 0..i), gqa (0/1: head h reads kv head h/(NH/KV));
//                                               the mask broadcasts to [...,NH,S,S2]. A row with no key left
//                                               gives NaN, as torch does.
// Rows and reductions (attr axis may be negative; keepdim 0/1 keeps the reduced dim as 1)
//   softmax log_softmax (x)                  -> stable (log-)softmax over attr axis; float
//   reduce_sum reduce_max reduce_min reduce_mean reduce_prod (x) -> attrs axis, keepdim
//   argmax argmin (x)                        -> i32, the first index of the extreme over attr axis (NaN
//                                               counts as the extreme, as torch does); attr keepdim
//   cumsum cumprod (x)                       -> inclusive scan along attr axis, x's shape and dtype
// Collectives (tensor parallelism, src/shard; each runs on every rank of a group of attr `ranks`, in the
// same order on every rank, so they keep their order like side effects and no region reaches across one)
//   all_reduce    (x)                        -> x's type: the element-wise sum of x over the ranks; float
//   all_gather    (x)                        -> x with dim attr `axis` (static) times `ranks`: the ranks'
//                                               x joined along axis in rank order; float
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
  // Primitive ops (graphs captured from PyTorch).
  kConstant,
  kArange,
  kIndexSelect,
  kGather,
  kPow,
  kMaximum,
  kMinimum,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kLogicalAnd,
  kLogicalOr,
  kWhere,
  kLog,
  kLog1p,
  kExpm1,
  kSqrt,
  kRsqrt,
  kAbs,
  kTanh,
  kSigmoid,
  kRelu,
  kErf,
  kSin,
  kCos,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,
  kSign,
  kGelu,
  kLeakyRelu,
  kClamp,
  kLogicalNot,
  kLayerNorm,
  kConcat,
  kFlip,
  kIndexCopy,
  kSdpa,
  kLogSoftmax,
  kReduceMin,
  kReduceProd,
  kArgmin,
  kCumsum,
  kCumprod,
  // Collectives (a module sharded for tensor parallelism).
  kAllReduce,
  kAllGather,
  // Random numbers (a captured module's random draws), a source like arange.
  kRandomUniform,
};

enum class OpClass : uint8_t {
  kSource,      // weight, constant, arange, random_uniform
  kGather,      // embedding, index_select, gather
  kMatmul,      // linear, matmul
  kPointwise,   // binary, unary, comparisons, where, cast
  kNorm,        // rmsnorm, layer_norm
  kRope,
  kLayout,      // reshape, view, transpose, slice, broadcast, concat, flip
  kSideEffect,  // kv_append, index_copy
  kAttention,   // attention, sdpa
  kSoftmax,     // softmax, log_softmax
  kReduction,   // reduce_*, argmax, argmin
  kScan,        // cumsum, cumprod
  kCollective,  // all_reduce, all_gather
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpClass op_class;
  int min_operands;
  int max_operands;
};

// Operand count limit of variadic ops (concat).
constexpr int kMaxOperands = 64;

const OpInfo& op_info(OpKind kind);
std::string_view op_name(OpKind kind);
std::optional<OpKind> parse_op(std::string_view name);
// Every op, in enum order.
int op_count();

inline bool has_side_effect(OpKind kind) { return op_info(kind).op_class == OpClass::kSideEffect; }
inline bool is_collective(OpKind kind) { return op_info(kind).op_class == OpClass::kCollective; }
inline bool is_layout(OpKind kind) { return op_info(kind).op_class == OpClass::kLayout; }
// Pointwise ops of one operand / of two operands / with a bool result.
bool is_unary_pointwise(OpKind kind);
bool is_binary_pointwise(OpKind kind);
bool is_comparison(OpKind kind);

}  // namespace agentcompile::ir
