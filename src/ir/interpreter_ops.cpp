// The reference interpreter's kernels (see interpreter_ops.h for what each computes).
//
// linear dominates a model's runtime, so it alone is tuned: the weight is split into blocks of rows,
// one task per block, and a block stays in cache while every row of x passes over it. The inner dot
// products keep eight independent float accumulators per output: float addition is not associative,
// so a reduction is only vectorized when its lanes are written out.
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

// Copies x into y[out_shape] reading x at offset sum(index[d] * step[d]): covers permutation
// (steps are permuted strides) and broadcasting (a stretched dim has step 0).
template <typename T>
void strided_copy(const T* x, T* y, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& step) {
  int64_t total = 1;
  for (int64_t size : out_shape) total *= size;
  const int rank = static_cast<int>(out_shape.size());
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t o = 0; o < total; ++o) {
    y[o] = x[offset];
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) {
        offset += step[d];
        break;
      }
      offset -= step[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

// Steps of a right-aligned, broadcast input inside out_shape: 0 where the input has no dim or size 1.
std::vector<int64_t> broadcast_steps(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
  const std::vector<int64_t> strides = row_major_strides(in_shape);
  const size_t lead = out_shape.size() - in_shape.size();
  std::vector<int64_t> step(out_shape.size(), 0);
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (in_shape[d] != 1) step[lead + d] = strides[d];
  return step;
}

template <typename T, typename F>
void binary_loop(F f, const T* a, const std::vector<int64_t>& a_shape, const T* b, const std::vector<int64_t>& b_shape,
                 T* y, const std::vector<int64_t>& out_shape) {
  int64_t total = 1;
  for (int64_t size : out_shape) total *= size;
  if (a_shape == out_shape && b_shape == out_shape) {  // residual adds, gating multiplies
    for (int64_t i = 0; i < total; ++i) y[i] = f(a[i], b[i]);
    return;
  }
  const std::vector<int64_t> sa = broadcast_steps(a_shape, out_shape);
  const std::vector<int64_t> sb = broadcast_steps(b_shape, out_shape);
  const int rank = static_cast<int>(out_shape.size());
  std::vector<int64_t> index(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t o = 0; o < total; ++o) {
    y[o] = f(a[oa], b[ob]);
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < out_shape[d]) {
        oa += sa[d];
        ob += sb[d];
        break;
      }
      oa -= sa[d] * (out_shape[d] - 1);
      ob -= sb[d] * (out_shape[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace

void linear(ThreadPool& pool, const float* x, const float* w, const float* b, float* y, int64_t M, int64_t N,
            int64_t K) {
  // 16 rows of w (16 * K floats) stay in L2 while all M rows of x pass over them.
  constexpr int64_t kRowBlock = 16;
  const int64_t blocks = (N + kRowBlock - 1) / kRowBlock;
  pool.parallel_for(blocks, grain_for(kRowBlock * K * M), [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t n0 = block * kRowBlock;
      const int64_t n1 = std::min(N, n0 + kRowBlock);
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

RopeTable rope_table(const std::vector<float>& inv_freq, int64_t pos, int64_t T) {
  const size_t half = inv_freq.size();
  RopeTable table;
  table.cos.resize(static_cast<size_t>(T) * half);  // [T, D/2]
  table.sin.resize(static_cast<size_t>(T) * half);  // [T, D/2]
  for (int64_t t = 0; t < T; ++t) {
    const float position = static_cast<float>(pos + t);
    for (size_t i = 0; i < half; ++i) {
      const float angle = position * inv_freq[i];
      table.cos[t * half + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      table.sin[t * half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
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

void attention(ThreadPool& pool, const float* q, const float* k, const float* v, float* out,
               const AttentionShape& shape) {
  const int64_t T = shape.T, NH = shape.NH, KV = shape.KV, D = shape.D;
  const int64_t group = NH / KV;
  const float scale = static_cast<float>(shape.scale);
  pool.parallel_for(T * NH, grain_for((shape.pos + T) * D * 2), [&](int64_t first, int64_t last) {
    std::vector<double> weights;
    std::vector<double> acc(static_cast<size_t>(D));
    for (int64_t item = first; item < last; ++item) {
      const int64_t t = item / NH;
      const int64_t h = item % NH;
      const int64_t kv_head = h / group;
      const int64_t keys = shape.pos + t + 1;  // causal: keys 0 .. pos+t
      const float* qr = q + (t * NH + h) * D;  // [D]
      weights.resize(static_cast<size_t>(keys));
      double max_score = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < keys; ++j) {
        const float score = dot1(qr, k + (j * KV + kv_head) * D, D) * scale;
        weights[j] = score;
        max_score = std::max(max_score, static_cast<double>(score));
      }
      double total = 0.0;
      for (int64_t j = 0; j < keys; ++j) {
        weights[j] = std::exp(weights[j] - max_score);
        total += weights[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < keys; ++j) {
        const float* vr = v + (j * KV + kv_head) * D;  // [D]
        const double p = weights[j];
        for (int64_t d = 0; d < D; ++d) acc[d] += p * vr[d];
      }
      float* o = out + (t * NH + h) * D;  // [D]
      for (int64_t d = 0; d < D; ++d) o[d] = static_cast<float>(acc[d] / total);
    }
  });
}

void softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  std::vector<double> e(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* xr = x + o * n * inner + i;
      float* yr = y + o * n * inner + i;
      double max_value = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) max_value = std::max(max_value, static_cast<double>(xr[j * inner]));
      double total = 0.0;
      for (int64_t j = 0; j < n; ++j) total += (e[j] = std::exp(xr[j * inner] - max_value));
      for (int64_t j = 0; j < n; ++j) yr[j * inner] = static_cast<float>(e[j] / total);
    }
  }
}

void reduce(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* xr = x + o * n * inner + i;
      if (reduction == Reduction::kMax) {
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) {
          const float value = xr[j * inner];
          if (std::isnan(value) || value > best) best = value;  // NaN propagates, as in torch
          if (std::isnan(best)) break;
        }
        y[o * inner + i] = best;
        continue;
      }
      double total = 0.0;
      for (int64_t j = 0; j < n; ++j) total += xr[j * inner];
      if (reduction == Reduction::kMean) total /= static_cast<double>(n);
      y[o * inner + i] = static_cast<float>(total);
    }
  }
}

void argmax(const float* x, int32_t* y, int64_t outer, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const float* xr = x + o * n * inner + i;
      int64_t best = 0;
      for (int64_t j = 1; j < n && !std::isnan(xr[best * inner]); ++j) {
        const float value = xr[j * inner];
        if (std::isnan(value) || value > xr[best * inner]) best = j;  // strict: ties keep the lowest index
      }
      y[o * inner + i] = static_cast<int32_t>(best);
    }
  }
}

template <typename T>
void permute(const T* x, T* y, const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  const std::vector<int64_t> strides = row_major_strides(shape);
  std::vector<int64_t> out_shape(shape.size()), step(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    out_shape[d] = shape[perm[d]];
    step[d] = strides[perm[d]];
  }
  strided_copy(x, y, out_shape, step);
}

template <typename T>
void slice(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, int64_t start, int64_t length) {
  for (int64_t o = 0; o < outer; ++o) std::copy_n(x + (o * n + start) * inner, length * inner, y + o * length * inner);
}

template <typename T>
void broadcast_to(const T* x, T* y, const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
  strided_copy(x, y, out_shape, broadcast_steps(in_shape, out_shape));
}

template <typename T>
void binary(Binary op, const T* a, const std::vector<int64_t>& a_shape, const T* b, const std::vector<int64_t>& b_shape,
            T* y, const std::vector<int64_t>& out_shape) {
  switch (op) {
    case Binary::kAdd: return binary_loop([](T p, T q) { return p + q; }, a, a_shape, b, b_shape, y, out_shape);
    case Binary::kSub: return binary_loop([](T p, T q) { return p - q; }, a, a_shape, b, b_shape, y, out_shape);
    case Binary::kMul: return binary_loop([](T p, T q) { return p * q; }, a, a_shape, b, b_shape, y, out_shape);
    case Binary::kDiv: return binary_loop([](T p, T q) { return p / q; }, a, a_shape, b, b_shape, y, out_shape);
  }
}

#define AC_INSTANTIATE_LAYOUT(T)                                                                                    \
  template void permute<T>(const T*, T*, const std::vector<int64_t>&, const std::vector<int64_t>&);                 \
  template void slice<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t);                                \
  template void broadcast_to<T>(const T*, T*, const std::vector<int64_t>&, const std::vector<int64_t>&);            \
  template void binary<T>(Binary, const T*, const std::vector<int64_t>&, const T*, const std::vector<int64_t>&, T*, \
                          const std::vector<int64_t>&);
AC_INSTANTIATE_LAYOUT(float)
AC_INSTANTIATE_LAYOUT(int32_t)
#undef AC_INSTANTIATE_LAYOUT

}  // namespace agentcompile::ir::kernels
