// Random tensors, dtype rounding and output comparison.
//
// Large tensors (an lm_head's 311 M weights, KernelBench's 1.6 G-element inputs) are drawn, encoded,
// decoded and compared in chunks of 2^20 elements on every core: chunk c has a random stream of its
// own (chunk 0 the stream a small tensor always had), and a comparison's per-chunk results are
// combined in chunk order, so neither values nor verdicts depend on the thread count.
//
// A draw is rounded to its dtype as it is made (bytes for the GPU, the decoded value for the
// reference, in one pass). Normals come from the ziggurat method (Marsaglia and Tsang 2000, in
// Doornik's ZIGNOR form: 128 layers, the tail by Marsaglia's exponential rejection): 99% of draws
// cost one 64-bit random word and a multiply, 2.8 ns a value on one core where the Box-Muller draw
// with a logarithm and a cosine it replaced took 20 ns; the draw is exact, not an approximation.
#include "tune/host_data.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <atomic>
#include <functional>
#include <limits>
#include <thread>

#include "support/large_buffers.h"

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

size_t TestTensor::device_bytes() const { return periodic ? static_cast<size_t>(elements()) * ir::dtype_size(dtype) : bytes.size(); }

namespace {

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Where chunk `chunk` of a tensor drawn from `seed` starts in splitmix's sequence. Chunk 0 starts at
// the seed's point; the others at a hash of their index, far apart: a start of seed + c steps would
// make chunk c repeat chunk 0 shifted by c draws.
uint64_t chunk_state(uint64_t seed, size_t chunk) {
  uint64_t state = seed * 0x2545f4914f6cdd1dull + 0x1234567ull;
  uint64_t index = chunk;
  return chunk == 0 ? state : state + splitmix(index);
}

double unit(uint64_t& state) { return (static_cast<double>(splitmix(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

// The ziggurat's layers: x[i] the right edge of layer i (x[0] the base strip's equivalent width,
// x[1] = R where the tail starts, x[128] = 0), r[i] = x[i+1] / x[i] the part of layer i that lies
// wholly under the density.
struct Ziggurat {
  static constexpr int kLayers = 128;
  static constexpr double kR = 3.442619855899;          // the tail's start
  static constexpr double kV = 9.91256303526217e-3;     // each layer's area
  std::array<double, kLayers + 1> x;
  std::array<double, kLayers> r;
};

const Ziggurat& ziggurat() {
  static const Ziggurat z = [] {
    Ziggurat t;
    double f = std::exp(-0.5 * Ziggurat::kR * Ziggurat::kR);
    t.x[0] = Ziggurat::kV / f;
    t.x[1] = Ziggurat::kR;
    t.x[Ziggurat::kLayers] = 0;
    for (int i = 2; i < Ziggurat::kLayers; ++i) {
      t.x[i] = std::sqrt(-2.0 * std::log(Ziggurat::kV / t.x[i - 1] + f));
      f = std::exp(-0.5 * t.x[i] * t.x[i]);
    }
    for (int i = 0; i < Ziggurat::kLayers; ++i) t.r[i] = t.x[i + 1] / t.x[i];
    return t;
  }();
  return z;
}

// One chunk's random stream: raw bits, uniforms and normals.
class Stream {
 public:
  explicit Stream(uint64_t state) : state_(state), z_(ziggurat()) {}
  uint64_t bits() { return splitmix(state_); }
  double uniform() { return unit(state_); }
  double normal() {
    for (;;) {
      const uint64_t word = splitmix(state_);  // bits 11..63 the position in the layer, bits 0..6 the layer
      const double u = (static_cast<double>(word >> 11) + 0.5) * (2.0 / 9007199254740992.0) - 1.0;
      const unsigned i = static_cast<unsigned>(word & 0x7f);
      if (std::fabs(u) < z_.r[i]) return u * z_.x[i];
      if (i == 0) {  // the tail beyond R
        double x, y;
        do {
          x = std::log(unit(state_)) / Ziggurat::kR;
          y = std::log(unit(state_));
        } while (-2.0 * y < x * x);
        return u < 0 ? x - Ziggurat::kR : Ziggurat::kR - x;
      }
      // The wedge of layer i: under the density with the probability its height there says.
      const double x = u * z_.x[i];
      const double f0 = std::exp(-0.5 * (z_.x[i] * z_.x[i] - x * x));
      const double f1 = std::exp(-0.5 * (z_.x[i + 1] * z_.x[i + 1] - x * x));
      if (f1 + unit(state_) * (f0 - f1) < 1.0) return x;
    }
  }

 private:
  uint64_t state_;
  const Ziggurat& z_;
};

// One draw of `distribution`.
double draw(Distribution distribution, Stream& stream) {
  switch (distribution) {
    case Distribution::kUniform: return 2.0 * stream.uniform() - 1.0;
    case Distribution::kHeavyTailed: {
      // A normal over the square root of a chi-square(3)/3 draw: Student-t with 3 degrees, clipped.
      const double n = stream.normal();
      double chi = 0;
      for (int i = 0; i < 3; ++i) {
        const double g = stream.normal();
        chi += g * g;
      }
      return std::clamp(n / std::sqrt(chi / 3.0 + 1e-12), -30.0, 30.0);
    }
    default: return stream.normal();
  }
}

constexpr size_t kChunk = size_t{1} << 20;

std::atomic<unsigned> pinned_threads{0};

unsigned thread_count() {
  const unsigned pinned = pinned_threads.load();
  return pinned ? pinned : std::max(1u, std::thread::hardware_concurrency());
}

// Runs body(chunk, begin, end) over [0, count) in chunks of kChunk, on several threads when there are
// several chunks.
void parallel_chunks(size_t count, const std::function<void(size_t, size_t, size_t)>& body) {
  const size_t chunks = (count + kChunk - 1) / kChunk;
  const size_t workers = std::min<size_t>(chunks, thread_count());
  if (workers <= 1) {
    for (size_t c = 0; c < chunks; ++c) body(c, c * kChunk, std::min(count, (c + 1) * kChunk));
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (size_t c = next++; c < chunks; c = next++) body(c, c * kChunk, std::min(count, (c + 1) * kChunk));
    });
  for (auto& t : threads) t.join();
}

// f16 decodes through a table of all 65536 values (the conversion's loop over subnormals stays out
// of the comparison of large outputs).
const std::vector<float>& half_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits) t[bits] = ir::half_to_float(static_cast<uint16_t>(bits));
    return t;
  }();
  return table;
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

float decode_one(ir::DType dtype, const uint8_t* in, const float* halves) {
  uint16_t half_bits;
  switch (dtype) {
    case ir::DType::kF16: std::memcpy(&half_bits, in, 2); return halves[half_bits];
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

// A comparison's partial result over one chunk.
struct ChunkErrors {
  double max_abs = 0;
  int64_t nan_count = 0;
  int64_t mismatches = 0;
};

// The comparison of `count` outputs, out(i) the i-th, with `ref`: per chunk, then combined in chunk
// order (maxima and integer counts: the same result for any thread count).
template <typename Out>
Comparison compare_with(size_t count, const Out& out, const std::vector<float>& ref, ir::DType dtype, ir::DType precision) {
  Comparison c;
  if (count != ref.size()) {
    c.reason = "output has " + std::to_string(count) + " elements, reference " + std::to_string(ref.size());
    return c;
  }
  const size_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<double> ref_maxima(chunks, 0.0);
  parallel_chunks(count, [&](size_t chunk, size_t begin, size_t end) {
    double m = 0;
    for (size_t i = begin; i < end; ++i) m = std::max(m, static_cast<double>(std::fabs(ref[i])));
    ref_maxima[chunk] = m;
  });
  double ref_max = 0;
  for (double m : ref_maxima) ref_max = std::max(ref_max, m);
  const double denom = ref_max > 0 ? ref_max : 1.0;
  const double tolerance = std::max(tolerance_for(dtype), tolerance_for(precision));
  std::vector<ChunkErrors> errors(chunks);
  parallel_chunks(count, [&](size_t chunk, size_t begin, size_t end) {
    ChunkErrors e;
    for (size_t i = begin; i < end; ++i) {
      const float value = out(i);
      if (std::isnan(value) || std::isinf(value)) {
        ++e.nan_count;
        continue;
      }
      const double err = std::fabs(static_cast<double>(value) - ref[i]);
      e.max_abs = std::max(e.max_abs, err);
      if (err / denom > tolerance) ++e.mismatches;
    }
    errors[chunk] = e;
  });
  for (const ChunkErrors& e : errors) {
    c.max_abs_error = std::max(c.max_abs_error, e.max_abs);
    c.nan_count += e.nan_count;
    c.mismatches += e.mismatches;
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

}  // namespace

ScopedHostThreads::ScopedHostThreads(unsigned threads) : previous_(pinned_threads.exchange(threads)) {}
ScopedHostThreads::~ScopedHostThreads() { pinned_threads.store(previous_); }

std::vector<float> decode_values(ir::DType dtype, const std::vector<uint8_t>& bytes) {
  const size_t size = ir::dtype_size(dtype);
  const float* halves = half_table().data();
  std::vector<float> values = support::zeroed_vector<float>(bytes.size() / size);
  parallel_chunks(values.size(), [&](size_t, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) values[i] = decode_one(dtype, &bytes[size * i], halves);
  });
  return values;
}

// The values are rounded in place: each becomes exactly what the GPU will read from its bytes.
TestTensor tensor_from_values(ir::DType dtype, std::vector<int64_t> shape, std::vector<float> values) {
  TestTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const size_t size = ir::dtype_size(dtype);
  const float* halves = half_table().data();
  t.bytes = support::zeroed_vector<uint8_t>(values.size() * size);
  parallel_chunks(values.size(), [&](size_t, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      encode_one(dtype, values[i], &t.bytes[size * i]);
      values[i] = decode_one(dtype, &t.bytes[size * i], halves);
    }
  });
  t.values = std::move(values);
  return t;
}

TestTensor random_tensor(ir::DType dtype, std::vector<int64_t> shape, Distribution distribution, uint64_t seed,
                         float scale, int32_t int_limit) {
  TestTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const size_t count = static_cast<size_t>(t.elements());
  const size_t size = ir::dtype_size(dtype);
  const float* halves = half_table().data();
  t.values = support::zeroed_vector<float>(count);
  t.bytes = support::zeroed_vector<uint8_t>(count * size);
  parallel_chunks(count, [&](size_t chunk, size_t begin, size_t end) {
    Stream stream(chunk_state(seed, chunk));
    for (size_t i = begin; i < end; ++i) {
      float value;
      if (dtype == ir::DType::kI32)
        value = static_cast<float>(stream.bits() % static_cast<uint64_t>(std::max(1, int_limit)));
      else if (dtype == ir::DType::kBool)
        value = static_cast<float>(stream.bits() & 1);
      else
        value = static_cast<float>(draw(distribution, stream) * scale);
      encode_one(dtype, value, &t.bytes[size * i]);
      t.values[i] = decode_one(dtype, &t.bytes[size * i], halves);
    }
  });
  return t;
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
  return compare_with(out.size(), [&](size_t i) { return out[i]; }, ref, dtype, precision);
}

Comparison compare_encoded(const std::vector<uint8_t>& out, const std::vector<float>& ref, ir::DType dtype, ir::DType precision) {
  const size_t size = ir::dtype_size(dtype);
  const float* halves = half_table().data();
  return compare_with(out.size() / size, [&](size_t i) { return decode_one(dtype, &out[size * i], halves); }, ref, dtype, precision);
}

}  // namespace agentcompile::tune
