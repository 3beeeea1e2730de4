// The reference interpreter's dense kernels: linear and matmul, rmsnorm and layer_norm, rope, and
// attention and sdpa (see interpreter_ops.h for what each computes).
//
// linear dominates a model's runtime, so it alone is tuned: the weight is split into blocks of rows,
// one task per block, and a block stays in cache while every row of x passes over it; matmul reuses
// it per batch. The inner dot products keep eight independent float accumulators per output: float
// addition is not associative, so a reduction is only vectorized when its lanes are written out.
#include "ir/interpreter_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

namespace agentcompile::ir::kernels {

namespace {

// Eight float lanes as two 4-wide vectors. GCC/Clang vector extensions keep the accumulators in
// registers (plain lane arrays were vectorized but spilled to the stack every step) and compile to
// baseline SSE, so results are the same on every x86-64 machine.
typedef float Vec4 __attribute__((vector_size(16)));
constexpr int64_t kLanes = 8;

inline Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Pairwise sum of the lanes, so the rounding does not depend on K.
inline float lane_sum(Vec4 lo, Vec4 hi) {
  const Vec4 s = lo + hi;  // lanes j and j+4
  return (s[0] + s[2]) + (s[1] + s[3]);
}

inline float dot1(const float* x, const float* w, int64_t K) {
  Vec4 lo = {}, hi = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    lo += load4(x + k) * load4(w + k);
    hi += load4(x + k + 4) * load4(w + k + 4);
  }
  float sum = lane_sum(lo, hi);
  for (; k < K; ++k) sum += x[k] * w[k];
  return sum;
}

// Four dot products sharing x, so each x element is loaded once for four weight rows. Each result
// equals dot1 of that row bit for bit (same lanes, same order), so an output never depends on how
// N was split across threads.
inline void dot4(const float* x, const float* w0, const float* w1, const float* w2, const float* w3, int64_t K,
                 float* out) {
  Vec4 lo0 = {}, hi0 = {}, lo1 = {}, hi1 = {}, lo2 = {}, hi2 = {}, lo3 = {}, hi3 = {};
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    const Vec4 xlo = load4(x + k), xhi = load4(x + k + 4);
    lo0 += xlo * load4(w0 + k);
    hi0 += xhi * load4(w0 + k + 4);
    lo1 += xlo * load4(w1 + k);
    hi1 += xhi * load4(w1 + k + 4);
    lo2 += xlo * load4(w2 + k);
    hi2 += xhi * load4(w2 + k + 4);
    lo3 += xlo * load4(w3 + k);
    hi3 += xhi * load4(w3 + k + 4);
  }
  float s0 = lane_sum(lo0, hi0), s1 = lane_sum(lo1, hi1), s2 = lane_sum(lo2, hi2), s3 = lane_sum(lo3, hi3);
  for (; k < K; ++k) {
    s0 += x[k] * w0[k];
    s1 += x[k] * w1[k];
    s2 += x[k] * w2[k];
    s3 += x[k] * w3[k];
  }
  out[0] = s0;
  out[1] = s1;
  out[2] = s2;
  out[3] = s3;
}

// Work below this many multiply-adds runs on the calling thread: waking the pool costs more.
constexpr int64_t kMinParallelWork = 32768;

int64_t grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinParallelWork / std::max<int64_t>(1, work_per_item));
}

// Rows [n0, n1) of y[M,N] = x[M,K] @ w[N,K]^T (+ b): rows n0..n1 of w (16 * K floats) stay in L2
// while all M rows of x pass over them.
constexpr int64_t kRowBlock = 16;
void linear_block(const float* x, const float* w, const float* b, float* y, int64_t M, int64_t N, int64_t K,
                  int64_t n0, int64_t n1) {
  for (int64_t m = 0; m < M; ++m) {
    const float* xr = x + m * K;  // [K]
    float* yr = y + m * N;        // [N]
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) dot4(xr, w + n * K, w + (n + 1) * K, w + (n + 2) * K, w + (n + 3) * K, K, yr + n);
    for (; n < n1; ++n) yr[n] = dot1(xr, w + n * K, K);
    if (b)
      for (n = n0; n < n1; ++n) yr[n] += b[n];
  }
}

}  // namespace

void linear(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t M, int64_t N,
            int64_t K) {
  const int64_t blocks = (N + kRowBlock - 1) / kRowBlock;
  pool.parallel_for(blocks, grain_for(kRowBlock * K * M), [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block)
      linear_block(x, w, b, y, M, N, K, block * kRowBlock, std::min(N, (block + 1) * kRowBlock));
  });
}

void matmul(ThreadPool& pool, const float* a, const float* b, float* y, int64_t batches, int64_t M, int64_t N,
            int64_t K) {
  std::vector<float> bt(static_cast<size_t>(batches * N * K));  // [B, N, K]: b transposed, so linear's dots apply
  for (int64_t batch = 0; batch < batches; ++batch)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) bt[(batch * N + n) * K + k] = b[(batch * K + k) * N + n];
  const int64_t blocks = (N + kRowBlock - 1) / kRowBlock;
  pool.parallel_for(batches * blocks, grain_for(kRowBlock * K * M), [&](int64_t first, int64_t last) {
    for (int64_t item = first; item < last; ++item) {
      const int64_t batch = item / blocks;
      const int64_t block = item % blocks;
      linear_block(a + batch * M * K, bt.data() + batch * N * K, nullptr, y + batch * M * N, M, N, K,
                   block * kRowBlock, std::min(N, (block + 1) * kRowBlock));
    }
  });
}

void rmsnorm(ThreadPool& pool, const float* x, const float* w, float* y, int64_t rows, int64_t D, double eps) {
  const float eps_f = static_cast<float>(eps);
  pool.parallel_for(rows, grain_for(D), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* xr = x + r * D;  // [D]
      float* yr = y + r * D;        // [D]
      double squares = 0.0;
      for (int64_t i = 0; i < D; ++i) squares += static_cast<double>(xr[i]) * xr[i];
      // HF: variance in float32, then rsqrt(variance + eps), then weight * (x * rsqrt).
      const float variance = static_cast<float>(squares / static_cast<double>(D));
      const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(variance + eps_f)));
      for (int64_t i = 0; i < D; ++i) yr[i] = w[i] * (xr[i] * inv);
    }
  });
}

void layer_norm(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t rows, int64_t D,
                double eps) {
  pool.parallel_for(rows, grain_for(D), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const float* xr = x + r * D;  // [D]
      float* yr = y + r * D;        // [D]
      double sum = 0.0;
      for (int64_t i = 0; i < D; ++i) sum += xr[i];
      const double mean = sum / static_cast<double>(D);
      double squares = 0.0;  // a second pass: no cancellation when |mean| >> the spread
      for (int64_t i = 0; i < D; ++i) squares += (xr[i] - mean) * (xr[i] - mean);
      const double inv = 1.0 / std::sqrt(squares / static_cast<double>(D) + eps);
      for (int64_t i = 0; i < D; ++i) {
        double value = (xr[i] - mean) * inv;
        if (w) value *= w[i];
        if (b) value += b[i];
        yr[i] = static_cast<float>(value);
      }
    }
  });
}

std::vector<float> rope_inv_freq(const RopeParams& params, int64_t D) {
  const int64_t half = D / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  // transformers: 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), all float32 tensors.
  const float base = static_cast<float>(params.theta);
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(D);
    inv[i] = 1.0f / ::powf(base, exponent);
  }
  if (params.scaling != "llama3") return inv;
  // transformers' _compute_llama3_parameters: Python scalars meet float32 tensors, so every
  // elementwise step below rounds to float32 as torch does.
  const float factor = static_cast<float>(params.factor);
  const float low_freq_factor = static_cast<float>(params.low_freq_factor);
  const float old_context = static_cast<float>(params.original_max_position);
  const float low_freq_wavelen = static_cast<float>(params.original_max_position / params.low_freq_factor);
  const float high_freq_wavelen = static_cast<float>(params.original_max_position / params.high_freq_factor);
  const float band = static_cast<float>(params.high_freq_factor - params.low_freq_factor);
  const float two_pi = static_cast<float>(2.0 * std::numbers::pi);
  for (int64_t i = 0; i < half; ++i) {
    const float wavelen = two_pi / inv[i];
    float scaled = wavelen > low_freq_wavelen ? inv[i] / factor : inv[i];
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const float smooth = (old_context / wavelen - low_freq_factor) / band;
      scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
    }
    inv[i] = scaled;
  }
  return inv;
}

RopeTable rope_table(const std::vector<float>& inv_freq, int64_t pos, int64_t T, float scale) {
  const size_t half = inv_freq.size();
  RopeTable table;
  table.cos.resize(static_cast<size_t>(T) * half);  // [T, D/2]
  table.sin.resize(static_cast<size_t>(T) * half);  // [T, D/2]
  for (int64_t t = 0; t < T; ++t) {
    const float position = static_cast<float>(pos + t);
    for (size_t i = 0; i < half; ++i) {
      const float angle = position * inv_freq[i];
      table.cos[t * half + i] = static_cast<float>(std::cos(static_cast<double>(angle))) * scale;
      table.sin[t * half + i] = static_cast<float>(std::sin(static_cast<double>(angle))) * scale;
    }
  }
  return table;
}

void rope(const float* x, float* y, int64_t T, int64_t H, int64_t D, const RopeTable& table) {
  const int64_t half = D / 2;
  for (int64_t t = 0; t < T; ++t) {
    const float* c = table.cos.data() + t * half;  // [D/2]
    const float* s = table.sin.data() + t * half;  // [D/2]
    for (int64_t h = 0; h < H; ++h) {
      const float* xr = x + (t * H + h) * D;  // [D]
      float* yr = y + (t * H + h) * D;        // [D]
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = xr[i];
        const float x2 = xr[i + half];
        yr[i] = x1 * c[i] - x2 * s[i];
        yr[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

namespace {

// The end of one query row of attention: `weights` holds the row's scores (float dots times scale,
// plus any bias) of the keys `keys`, ascending; softmax and the weighted sum of v rows (key j at
// v + j * v_stride) run in double. attention and sdpa both end here, so the same keys give the same
// bits. No key at all gives NaN (torch's math backend: a softmax over only -inf).
struct RowScratch {
  std::vector<int64_t> keys;
  std::vector<double> weights;
  std::vector<double> acc;
};
void attend_row(const float* v, int64_t v_stride, int64_t Dv, RowScratch& scratch, float* out) {
  if (scratch.keys.empty()) {
    std::fill(out, out + Dv, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  double max_score = -std::numeric_limits<double>::infinity();
  for (double w : scratch.weights) max_score = std::max(max_score, w);
  double total = 0.0;
  for (double& w : scratch.weights) total += (w = std::exp(w - max_score));
  scratch.acc.assign(static_cast<size_t>(Dv), 0.0);
  for (size_t n = 0; n < scratch.keys.size(); ++n) {
    const float* vr = v + scratch.keys[n] * v_stride;  // [Dv]
    const double p = scratch.weights[n];
    for (int64_t d = 0; d < Dv; ++d) scratch.acc[d] += p * vr[d];
  }
  for (int64_t d = 0; d < Dv; ++d) out[d] = static_cast<float>(scratch.acc[d] / total);
}

}  // namespace

void attention(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
               const AttentionShape& shape) {
  const int64_t T = shape.T, NH = shape.NH, KV = shape.KV, D = shape.D;
  const int64_t group = NH / KV;
  const float scale = static_cast<float>(shape.scale);
  pool.parallel_for(T * NH, grain_for((shape.pos + T) * D * 2), [&](int64_t first, int64_t last) {
    RowScratch scratch;
    for (int64_t item = first; item < last; ++item) {
      const int64_t t = item / NH;
      const int64_t h = item % NH;
      const int64_t kv_head = h / group;
      const int64_t last_key = shape.pos + t;  // causal: keys .. pos+t
      const int64_t first_key = shape.window > 0 ? std::max<int64_t>(0, last_key - shape.window + 1) : 0;
      const float* qr = q + (t * NH + h) * D;  // [D]
      scratch.keys.clear();
      scratch.weights.clear();
      for (int64_t j = first_key; j <= last_key; ++j) {
        scratch.keys.push_back(j);
        scratch.weights.push_back(dot1(qr, k + (j * KV + kv_head) * D, D) * scale);
      }
      attend_row(v + kv_head * D, KV * D, D, scratch, out + (t * NH + h) * D);
    }
  });
}

void sdpa(ThreadPool& pool, const float* q, const float* k, const float* v, float* out, const SdpaShape& shape,
          const SdpaMask& mask) {
  const int64_t NH = shape.NH, KV = shape.KV, S = shape.S, S2 = shape.S2, D = shape.D, Dv = shape.Dv;
  int64_t batches = 1;
  for (int64_t size : shape.batch) batches *= size;
  const int64_t rows = batches * NH * S;
  const int64_t group = KV > 0 ? NH / KV : 1;
  const float scale = static_cast<float>(shape.scale);
  const size_t rank = shape.batch.size();
  const bool masked = mask.keep || mask.bias;
  const int64_t key_step = masked ? mask.steps[rank + 2] : 0;
  pool.parallel_for(rows, grain_for(S2 * (D + Dv)), [&](int64_t first, int64_t last) {
    RowScratch scratch;
    for (int64_t row = first; row < last; ++row) {  // row = (b * NH + h) * S + i
      const int64_t i = row % S;
      const int64_t h = row / S % NH;
      const int64_t b = row / (S * NH);
      const int64_t kv = b * KV + h / group;
      int64_t mask_row = 0;  // the mask's offset of scores[b..., h, i, 0]
      if (masked) {
        int64_t rest = b;
        for (size_t d = rank; d-- > 0;) {
          mask_row += rest % shape.batch[d] * mask.steps[d];
          rest /= shape.batch[d];
        }
        mask_row += h * mask.steps[rank] + i * mask.steps[rank + 1];
      }
      const float* qr = q + row * D;      // [D]
      const float* kb = k + kv * S2 * D;  // [S2, D]
      const int64_t keys = shape.causal ? std::min(S2, i + 1) : S2;
      scratch.keys.clear();
      scratch.weights.clear();
      for (int64_t j = 0; j < keys; ++j) {
        const int64_t at = mask_row + j * key_step;
        if (mask.keep && mask.keep[at] == 0) continue;  // a dropped key costs no dot product
        float score = dot1(qr, kb + j * D, D) * scale;
        if (mask.bias) score += mask.bias[at];
        scratch.keys.push_back(j);
        scratch.weights.push_back(score);
      }
      attend_row(v + kv * S2 * Dv, Dv, Dv, scratch, out + row * Dv);
    }
  });
}

}  // namespace agentcompile::ir::kernels
