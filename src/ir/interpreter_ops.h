// The reference interpreter's kernels: plain fp32 loops over contiguous row-major buffers.
//
// Each kernel implements one op of ir/ops.h on already-resolved sizes; shape checks and errors live
// in interpreter.cpp. Numerics follow what Hugging Face transformers computes in float32: products
// and activations in float, long sums (norms, softmax denominators, attention) in double, so the
// interpreter stays a tighter reference than the models it is compared with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/thread_pool.h"

namespace agentcompile::ir::kernels {

// y[M,N] = x[M,K] @ w[N,K]^T (+ b[N]); b may be null. Parallel over N.
void linear(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t M, int64_t N,
            int64_t K);

// y[rows,D] = x * 1/sqrt(mean(x^2) + eps) * w, per row.
void rmsnorm(ThreadPool& pool, const float* x, const float* w, float* y, int64_t rows, int64_t D, double eps);

struct RopeParams {
  double theta = 10000.0;
  std::string scaling = "none";  // "none" or "llama3"
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position = 8192.0;
};

// HF's inv_freq for head dim D (D/2 entries), in float32 as transformers computes it, with llama3
// scaling applied when asked.
std::vector<float> rope_inv_freq(const RopeParams& params, int64_t D);

// cos/sin tables [T, D/2] for positions pos..pos+T-1: angle = float(pos+t) * inv_freq in float,
// cos and sin evaluated in double and rounded to float (what torch's float32 cos/sin return).
struct RopeTable {
  std::vector<float> cos;
  std::vector<float> sin;
};
RopeTable rope_table(const std::vector<float>& inv_freq, int64_t pos, int64_t T);

// y[T,H,D] = rotate-half rotary embedding of x[T,H,D] with table rows t.
void rope(const float* x, float* y, int64_t T, int64_t H, int64_t D, const RopeTable& table);

struct AttentionShape {
  int64_t T = 1;    // queries
  int64_t NH = 1;   // query heads
  int64_t KV = 1;   // kv heads (NH % KV == 0)
  int64_t D = 1;    // head dim
  int64_t pos = 0;  // position of query 0; query t sees keys 0..pos+t
  double scale = 1.0;
};
// out[T,NH,D] = softmax(scale * q k^T) v, causal, GQA; k and v are [rows >= pos+T, KV, D].
void attention(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
               const AttentionShape& shape);

// Ops over one axis of a tensor viewed as [outer, n, inner].
void softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner);
enum class Reduction { kSum, kMax, kMean };
void reduce(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction);
// Index of the largest value; ties go to the lowest index and NaN counts as largest (as torch does).
void argmax(const float* x, int32_t* y, int64_t outer, int64_t n, int64_t inner);

// Layout ops, for float and int32_t elements.
template <typename T>
void permute(const T* x, T* y, const std::vector<int64_t>& shape, const std::vector<int64_t>& perm);
template <typename T>
void slice(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t length);
// y[out_shape] = x[in_shape] broadcast numpy-style (in_shape right-aligned, size-1 dims stretch).
template <typename T>
void broadcast_to(const T* x, T* y, const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape);

enum class Binary { kAdd, kSub, kMul, kDiv };
// y[out_shape] = a op b with numpy broadcasting. Integer division truncates; the caller rules out
// division by zero.
template <typename T>
void binary(Binary op, const T* a, const std::vector<int64_t>& a_shape, const T* b, const std::vector<int64_t>& b_shape,
            T* y, const std::vector<int64_t>& out_shape);

}  // namespace agentcompile::ir::kernels
