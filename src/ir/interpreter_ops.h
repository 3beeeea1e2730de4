// The reference interpreter's numeric kernels: plain loops over contiguous row-major buffers.
//
// Each kernel implements one op of ir/ops.h on already-resolved sizes; shape checks and errors live
// in interpreter_exec.cpp. Numerics follow what Hugging Face transformers computes in float32: products
// and activations in float, long sums (norms, softmax denominators, attention, scans) in double, so
// the interpreter stays a tighter reference than the models it is compared with. The parallel kernels
// give every output to exactly one task with a fixed order of operations, so results never depend on
// the thread count. interpreter_ops.cpp holds the matmuls, norms, rope and attention;
// interpreter_rows.cpp the ops over one axis (softmax, reductions, arg-extremes, scans).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/thread_pool.h"

namespace agentcompile::ir::kernels {

// y[M,N] = x[M,K] @ w[N,K]^T (+ b[N]); b may be null. Parallel over N.
void linear(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t M, int64_t N,
            int64_t K);
// y[B,M,N] = a[B,M,K] @ b[B,K,N], each product computed as linear computes it. Parallel over batches
// and blocks of N together (a batched matmul of few rows still fills the pool).
void matmul(ThreadPool& pool, const float* a, const float* b, float* y, int64_t batches, int64_t M, int64_t N,
            int64_t K);

// y[rows,D] = x * 1/sqrt(mean(x^2) + eps) * w, per row.
void rmsnorm(ThreadPool& pool, const float* x, const float* w, float* y, int64_t rows, int64_t D, double eps);
// y[rows,D] = (x - mean) / sqrt(var + eps) (* w) (+ b), var biased; w and b may be null. Mean,
// variance and each output are computed in double and rounded once.
void layer_norm(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t D,
                double eps);

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
// cos and sin evaluated in double and rounded to float (what torch's float32 cos/sin return), then
// multiplied in float by `scale` (HF's attention_scaling; 1 leaves them unchanged).
struct RopeTable {
  std::vector<float> cos;
  std::vector<float> sin;
};
RopeTable rope_table(const std::vector<float>& inv_freq, int64_t pos, int64_t T, float scale = 1.0f);

// y[T,H,D] = rotate-half rotary embedding of x[T,H,D] with table rows t.
void rope(const float* x, float* y, int64_t T, int64_t H, int64_t D, const RopeTable& table);

struct AttentionShape {
  int64_t T = 1;       // queries
  int64_t NH = 1;      // query heads
  int64_t KV = 1;      // kv heads (NH % KV == 0)
  int64_t D = 1;       // head dim
  int64_t pos = 0;     // position of query 0; query t sees keys 0..pos+t
  int64_t window = 0;  // > 0: query t sees only keys max(0, pos+t-window+1)..pos+t
  double scale = 1.0;
};
// out[T,NH,D] = softmax(scale * q k^T) v, causal, GQA; k and v are [rows >= pos+T, KV, D].
void attention(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
               const AttentionShape& shape);

// torch's scaled_dot_product_attention over q[B..., NH, S, D], k[B..., KV, S2, D], v[B..., KV, S2, Dv].
struct SdpaShape {
  std::vector<int64_t> batch;  // the leading dims B...
  int64_t NH = 1, KV = 1, S = 1, S2 = 1, D = 1, Dv = 1;
  double scale = 1.0;
  bool causal = false;  // query i sees keys 0..i
};
// An optional mask read through broadcast steps over the scores [B..., NH, S, S2] (rank batch + 3).
struct SdpaMask {
  const int32_t* keep = nullptr;  // bool mask: a key takes part where nonzero
  const float* bias = nullptr;    // float mask: added to the scaled scores
  std::vector<int64_t> steps;
};
// out[B..., NH, S, Dv]. Scores, softmax and the weighted sum are computed as attention computes them,
// so the same keys give the same bits; a row with no key left is NaN. Parallel over rows.
void sdpa(ThreadPool& pool, const float* q, const float* k, const float* v, float* out, const SdpaShape& shape,
          const SdpaMask& mask);

// Ops over one axis of a tensor viewed as [outer, n, inner].
void softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner);
void log_softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner);
enum class Reduction { kSum, kMax, kMin, kMean, kProd };
// Float sums, means and products accumulate in double; max/min propagate NaN. The caller rules out
// max/min/mean over an empty axis.
void reduce(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction);
// Integer sums and products wrap like int32 arithmetic (kMean is not defined on integers).
void reduce(const int32_t* x, int32_t* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction);
// Index of the largest / smallest value; ties go to the lowest index and NaN counts as the extreme
// (as torch does). n must be at least 1.
template <typename T>
void argmax(const T* x, int32_t* y, int64_t outer, int64_t n, int64_t inner);
template <typename T>
void argmin(const T* x, int32_t* y, int64_t outer, int64_t n, int64_t inner);
// Inclusive scans: float ones accumulate in double and round each output; int32 ones wrap.
void cumulative(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool product);
void cumulative(const int32_t* x, int32_t* y, int64_t outer, int64_t n, int64_t inner, bool product);

}  // namespace agentcompile::ir::kernels
