// The reference interpreter's ops over one axis (see interpreter_ops.h): softmax, log_softmax,
// reductions, argmax/argmin and inclusive scans, each on a tensor viewed as [outer, n, inner] so one
// loop serves every axis. Integer arithmetic goes through uint32_t: int32 overflow wraps as torch's
// does instead of being undefined.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/interpreter_exec.h"
#include "ir/interpreter_ops.h"

namespace agentcompile::ir::kernels {

namespace {

// Calls row(in, out) for every (outer, inner) pair: `in` points at the row's first element, whose
// elements lie `inner` apart; `out` at the row's result slot for reductions.
// Rows run in parallel chunks on the executing node's pool when there is enough work (row must
// only write its own slots).
template <typename F>
void for_each_row(int64_t outer, int64_t n, int64_t inner, F row) {
  exec::parallel_elements(
      outer * inner,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r / inner, i = r % inner;
          row(o * n * inner + i, o * inner + i);
        }
      },
      n);
}

int32_t wrap(uint32_t value) { return static_cast<int32_t>(value); }  // modular since C++20

// Index of the extreme value of one row; `better(a, b)` says a beats b strictly.
template <typename T, typename Better>
int32_t extreme_index(const T* x, int64_t n, int64_t stride, Better better) {
  int64_t best = 0;
  for (int64_t j = 1; j < n; ++j) {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x[best * stride])) break;  // NaN is the extreme: the first one wins
    const T value = x[j * stride];
    bool wins = better(value, x[best * stride]);
    if constexpr (std::is_floating_point_v<T>) wins = wins || std::isnan(value);
    if (wins) best = j;  // strict: ties keep the lowest index
  }
  return static_cast<int32_t>(best);
}

}  // namespace

void softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t) {
    thread_local std::vector<double> e;  // rows may run on several threads
    e.resize(static_cast<size_t>(n));
    const float* xr = x + at;
    float* yr = y + at;
    double max_value = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) max_value = std::max(max_value, static_cast<double>(xr[j * inner]));
    double total = 0.0;
    for (int64_t j = 0; j < n; ++j) total += (e[j] = std::exp(xr[j * inner] - max_value));
    for (int64_t j = 0; j < n; ++j) yr[j * inner] = static_cast<float>(e[j] / total);
  });
}

void log_softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t) {
    const float* xr = x + at;
    float* yr = y + at;
    double max_value = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) max_value = std::max(max_value, static_cast<double>(xr[j * inner]));
    double total = 0.0;
    for (int64_t j = 0; j < n; ++j) total += std::exp(xr[j * inner] - max_value);
    const double log_total = std::log(total);
    for (int64_t j = 0; j < n; ++j) yr[j * inner] = static_cast<float>((xr[j * inner] - max_value) - log_total);
  });
}

namespace {

// A reduction whose rows are strided (inner > 1: a column sum, BatchNorm's mean over N, H, W) runs a
// block of neighbouring rows at once, walking j outermost so every read streams through memory; row
// by row each read was a cache miss `inner` floats from the last. The same operations in the same
// order per row as reduce's row loop, so the results are bit for bit the same.
constexpr int64_t kColumnBlock = 512;

void reduce_columns(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction) {
  const int64_t blocks_per_outer = (inner + kColumnBlock - 1) / kColumnBlock;
  exec::parallel_elements(
      outer * blocks_per_outer,
      [&](int64_t begin, int64_t end) {
        double total[kColumnBlock];
        float best[kColumnBlock];
        for (int64_t b = begin; b < end; ++b) {
          const int64_t o = b / blocks_per_outer, i0 = (b % blocks_per_outer) * kColumnBlock;
          const int64_t width = std::min(kColumnBlock, inner - i0);
          const float* base = x + o * n * inner + i0;
          if (reduction == Reduction::kMax || reduction == Reduction::kMin) {
            const bool max = reduction == Reduction::kMax;
            for (int64_t i = 0; i < width; ++i) best[i] = base[i];
            for (int64_t j = 1; j < n; ++j) {
              const float* xj = base + j * inner;
              for (int64_t i = 0; i < width; ++i) {
                if (std::isnan(best[i])) continue;  // NaN propagates, as in torch
                const float value = xj[i];
                if (std::isnan(value) || (max ? value > best[i] : value < best[i])) best[i] = value;
              }
            }
            for (int64_t i = 0; i < width; ++i) y[o * inner + i0 + i] = best[i];
            continue;
          }
          const bool product = reduction == Reduction::kProd;
          for (int64_t i = 0; i < width; ++i) total[i] = product ? 1.0 : 0.0;
          for (int64_t j = 0; j < n; ++j) {
            const float* xj = base + j * inner;
            if (product)
              for (int64_t i = 0; i < width; ++i) total[i] *= xj[i];
            else
              for (int64_t i = 0; i < width; ++i) total[i] += xj[i];
          }
          for (int64_t i = 0; i < width; ++i)
            y[o * inner + i0 + i] = static_cast<float>(reduction == Reduction::kMean ? total[i] / static_cast<double>(n) : total[i]);
        }
      },
      n * kColumnBlock);
}

}  // namespace

void reduce(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction) {
  if (inner > 1 && n > 0) return reduce_columns(x, y, outer, n, inner, reduction);
  for_each_row(outer, n, inner, [&](int64_t at, int64_t slot) {
    const float* xr = x + at;
    if (reduction == Reduction::kMax || reduction == Reduction::kMin) {
      const bool max = reduction == Reduction::kMax;
      float best = xr[0];
      for (int64_t j = 1; j < n && !std::isnan(best); ++j) {  // NaN propagates, as in torch
        const float value = xr[j * inner];
        if (std::isnan(value) || (max ? value > best : value < best)) best = value;
      }
      y[slot] = best;
      return;
    }
    double total = reduction == Reduction::kProd ? 1.0 : 0.0;
    for (int64_t j = 0; j < n; ++j) {
      if (reduction == Reduction::kProd)
        total *= xr[j * inner];
      else
        total += xr[j * inner];
    }
    if (reduction == Reduction::kMean) total /= static_cast<double>(n);
    y[slot] = static_cast<float>(total);
  });
}

void reduce(const int32_t* x, int32_t* y, int64_t outer, int64_t n, int64_t inner, Reduction reduction) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t slot) {
    const int32_t* xr = x + at;
    if (reduction == Reduction::kMax || reduction == Reduction::kMin) {
      int32_t best = xr[0];
      for (int64_t j = 1; j < n; ++j)
        best = reduction == Reduction::kMax ? std::max(best, xr[j * inner]) : std::min(best, xr[j * inner]);
      y[slot] = best;
      return;
    }
    uint32_t total = reduction == Reduction::kProd ? 1u : 0u;
    for (int64_t j = 0; j < n; ++j) {
      const auto value = static_cast<uint32_t>(xr[j * inner]);
      total = reduction == Reduction::kProd ? total * value : total + value;
    }
    y[slot] = wrap(total);
  });
}

template <typename T>
void argmax(const T* x, int32_t* y, int64_t outer, int64_t n, int64_t inner) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t slot) {
    y[slot] = extreme_index(x + at, n, inner, [](T a, T b) { return a > b; });
  });
}

template <typename T>
void argmin(const T* x, int32_t* y, int64_t outer, int64_t n, int64_t inner) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t slot) {
    y[slot] = extreme_index(x + at, n, inner, [](T a, T b) { return a < b; });
  });
}

template void argmax<float>(const float*, int32_t*, int64_t, int64_t, int64_t);
template void argmax<int32_t>(const int32_t*, int32_t*, int64_t, int64_t, int64_t);
template void argmin<float>(const float*, int32_t*, int64_t, int64_t, int64_t);
template void argmin<int32_t>(const int32_t*, int32_t*, int64_t, int64_t, int64_t);

void cumulative(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool product) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t) {
    double running = product ? 1.0 : 0.0;
    for (int64_t j = 0; j < n; ++j) {
      const double value = x[at + j * inner];
      running = product ? running * value : running + value;
      y[at + j * inner] = static_cast<float>(running);
    }
  });
}

void cumulative(const int32_t* x, int32_t* y, int64_t outer, int64_t n, int64_t inner, bool product) {
  for_each_row(outer, n, inner, [&](int64_t at, int64_t) {
    uint32_t running = product ? 1u : 0u;
    for (int64_t j = 0; j < n; ++j) {
      const auto value = static_cast<uint32_t>(x[at + j * inner]);
      running = product ? running * value : running + value;
      y[at + j * inner] = wrap(running);
    }
  });
}

}  // namespace agentcompile::ir::kernels
