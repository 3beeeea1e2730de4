// Random tensors, dtype rounding and output comparison.
//
// Large tensors (KernelBench's 1.6 G-element inputs) are drawn, encoded and decoded in chunks of
// 2^20 elements on every core: chunk c has a stream of its own (chunk 0 the stream a small tensor
// always had), so the values do not depend on the thread count.
#include "tune/host_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <atomic>
#include <functional>
#include <limits>
#include <thread>

namespace agentcompile::tune {

const char* distribution_name(Distribution distribution) {
  switch (distribution) {
    case Distribution::kNormal: return "normal";
    case Distribution::kUniform: return "uniform";
    case Distribution::kHeavyTailed: return "heavy-tailed";
  }
  return "?";
}

int64_t TestTensor::elements() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double unit(uint64_t& state) { return (static_cast<double>(splitmix(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

constexpr size_t kChunk = size_t{1} << 20;

// Runs body(begin, end) over [0, count) in chunks of kChunk, on all cores when there are several.
void parallel_chunks(size_t count, const std::function<void(size_t, size_t)>& body) {
  const size_t chunks = (count + kChunk - 1) / kChunk;
  const size_t workers = std::min<size_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (size_t c = 0; c < chunks; ++c) body(c * kChunk, std::min(count, (c + 1) * kChunk));
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (size_t c = next++; c < chunks; c = next++) body(c * kChunk, std::min(count, (c + 1) * kChunk));
    });
  for (auto& t : threads) t.join();
}

void encode_one(ir::DType dtype, float value, uint8_t* out) {
  switch (dtype) {
    case ir::DType::kF16: {
      const uint16_t bits = ir::float_to_half(value);
      std::memcpy(out, &bits, 2);
      break;
    }
    case ir::DType::kBF16: {
      const uint16_t bits = ir::float_to_bf16(value);
      std::memcpy(out, &bits, 2);
      break;
    }
    case ir::DType::kI32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(out, &v, 4);
      break;
    }
    case ir::DType::kBool: *out = value != 0.0f ? 1 : 0; break;
    default: std::memcpy(out, &value, 4);
  }
}

float decode_one(ir::DType dtype, const uint8_t* in) {
  uint16_t half_bits;
  switch (dtype) {
    case ir::DType::kF16: std::memcpy(&half_bits, in, 2); return ir::half_to_float(half_bits);
    case ir::DType::kBF16: std::memcpy(&half_bits, in, 2); return ir::bf16_to_float(half_bits);
    case ir::DType::kI32: {
      int32_t v;
      std::memcpy(&v, in, 4);
      return static_cast<float>(v);
    }
    case ir::DType::kBool: return static_cast<float>(*in);  // a byte other than 0/1 stays visible
    default: {
      float v;
      std::memcpy(&v, in, 4);
      return v;
    }
  }
}

// One draw of `distribution` from `state`.
double draw(Distribution distribution, uint64_t& state) {
  switch (distribution) {
    case Distribution::kUniform: return 2.0 * unit(state) - 1.0;
    case Distribution::kHeavyTailed: {
      // Normal over the square root of a chi-square(3)/3 draw: Student-t with 3 degrees, clipped.
      const double n = std::sqrt(-2.0 * std::log(unit(state))) * std::cos(6.283185307179586 * unit(state));
      double chi = 0;
      for (int i = 0; i < 3; ++i) {
        const double g = std::sqrt(-2.0 * std::log(unit(state))) * std::cos(6.283185307179586 * unit(state));
        chi += g * g;
      }
      return std::clamp(n / std::sqrt(chi / 3.0 + 1e-12), -30.0, 30.0);
    }
    default: return std::sqrt(-2.0 * std::log(unit(state))) * std::cos(6.283185307179586 * unit(state));
  }
}

}  // namespace

std::vector<float> decode_values(ir::DType dtype, const std::vector<uint8_t>& bytes) {
  const size_t size = ir::dtype_size(dtype);
  std::vector<float> values(bytes.size() / size);
  parallel_chunks(values.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) values[i] = decode_one(dtype, &bytes[size * i]);
  });
  return values;
}

TestTensor tensor_from_values(ir::DType dtype, std::vector<int64_t> shape, std::vector<float> values) {
  TestTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const size_t size = ir::dtype_size(dtype);
  t.bytes.resize(values.size() * size);
  parallel_chunks(values.size(), [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) encode_one(dtype, values[i], &t.bytes[size * i]);
  });
  t.values = decode_values(dtype, t.bytes);  // exactly what the GPU will read
  return t;
}

TestTensor random_tensor(ir::DType dtype, std::vector<int64_t> shape, Distribution distribution, uint64_t seed,
                         float scale, int32_t int_limit) {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  std::vector<float> values(static_cast<size_t>(count));
  parallel_chunks(values.size(), [&](size_t begin, size_t end) {
    uint64_t state = seed * 0x2545f4914f6cdd1dull + 0x1234567ull + (begin / kChunk) * 0x9e3779b97f4a7c15ull;
    for (size_t i = begin; i < end; ++i) {
      if (dtype == ir::DType::kI32)
        values[i] = static_cast<float>(splitmix(state) % static_cast<uint64_t>(std::max(1, int_limit)));
      else if (dtype == ir::DType::kBool)
        values[i] = static_cast<float>(splitmix(state) & 1);
      else
        values[i] = static_cast<float>(draw(distribution, state) * scale);
    }
  });
  return tensor_from_values(dtype, std::move(shape), std::move(values));
}

double tolerance_for(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kF32: return 1e-4;
    case ir::DType::kF16: return 4e-3;
    case ir::DType::kBF16: return 2e-2;
    default: return 0;
  }
}

Comparison compare(const std::vector<float>& out, const std::vector<float>& ref, ir::DType dtype, ir::DType precision) {
  Comparison c;
  if (out.size() != ref.size()) {
    c.reason = "output has " + std::to_string(out.size()) + " elements, reference " + std::to_string(ref.size());
    return c;
  }
  double ref_max = 0;
  for (float r : ref) ref_max = std::max(ref_max, static_cast<double>(std::fabs(r)));
  const double denom = ref_max > 0 ? ref_max : 1.0;
  const double tolerance = std::max(tolerance_for(dtype), tolerance_for(precision));
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i]) || std::isinf(out[i])) {
      ++c.nan_count;
      continue;
    }
    const double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (err / denom > tolerance) ++c.mismatches;
  }
  c.max_rel_error = c.max_abs_error / denom;
  if (c.nan_count) {
    c.reason = std::to_string(c.nan_count) + " NaN/Inf values in the output (unwritten or overflowed)";
  } else if (c.mismatches) {
    char text[160];
    std::snprintf(text, sizeof(text), "wrong numbers: max error %.3g of max |ref| %.3g (relative %.3g > tolerance %.3g)",
                  c.max_abs_error, ref_max, c.max_rel_error, tolerance);
    c.reason = text;
  } else {
    c.ok = true;
  }
  return c;
}

}  // namespace agentcompile::tune
