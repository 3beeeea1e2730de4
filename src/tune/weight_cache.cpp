// Weights drawn by key and kept for a compile (see weight_cache.h).
#include "tune/weight_cache.h"

#include <cmath>

#include "ir/quant.h"

namespace agentcompile::tune {

namespace {

size_t host_bytes(const TestTensor& t) { return t.values.size() * sizeof(float) + t.bytes.size(); }

// The key's stream: FNV-1a over its fields.
uint64_t seed_of(const WeightKey& key) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto mix = [&](uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) {
      hash ^= (value >> (8 * byte)) & 0xffu;
      hash *= 0x100000001b3ull;
    }
  };
  mix(static_cast<uint64_t>(key.dtype));
  mix(key.shape.size());
  for (int64_t size : key.shape) mix(static_cast<uint64_t>(size));
  mix(key.norm);
  mix(static_cast<uint64_t>(key.occurrence));
  return hash;
}

}  // namespace

// Magnitudes a real model has: matrices scaled by 1/sqrt(K) so dot products stay O(1), norm scales
// near 1.
TestTensor draw_weight(const WeightKey& key) {
  if (key.norm) {
    TestTensor t = random_tensor(key.dtype, key.shape, Distribution::kNormal, seed_of(key), 0.2f);
    for (auto& v : t.values) v += 1.0f;
    return tensor_from_values(key.dtype, key.shape, std::move(t.values));
  }
  const float scale = key.shape.size() == 2 ? 1.0f / std::sqrt(static_cast<float>(key.shape[1])) : 0.1f;
  if (ir::is_quantized(key.dtype) && key.shape.size() == 2) {
    // A quantized matrix: f32 values of the same magnitudes, quantized to nearest; the values kept are
    // the bytes' dequantization, which is what the kernels and the interpreter both read.
    TestTensor values = random_tensor(ir::DType::kF32, key.shape, Distribution::kNormal, seed_of(key), scale);
    const int64_t rows = key.shape[0], K = key.shape[1];
    TestTensor t;
    t.dtype = key.dtype;
    t.shape = key.shape;
    t.bytes.assign(ir::tensor_bytes(ir::TensorType{key.dtype, {ir::Dim::of(rows), ir::Dim::of(K)}}), 0);
    t.values.resize(values.values.size());
    // The region's weight type was verified (a row length its format stores); a failure here is a
    // format these helpers do not quantize (GGUF blocks): the bytes stay zero and so do the values.
    if (ir::quantize_rows(key.dtype, values.values.data(), rows, K, t.bytes.data()).is_ok())
      (void)ir::dequantize_rows(key.dtype, t.bytes.data(), rows, K, t.values.data());
    return t;
  }
  return random_tensor(key.dtype, key.shape, Distribution::kNormal, seed_of(key), scale);
}

std::shared_ptr<const TestTensor> WeightCache::get(const WeightKey& key) {
  ++uses_;
  if (auto found = entries_.find(key); found != entries_.end()) {
    found->second.last_use = uses_;
    return found->second.tensor;
  }
  auto tensor = std::make_shared<const TestTensor>(draw_weight(key));
  ++draws_;
  const size_t bytes = host_bytes(*tensor);
  if (bytes > max_bytes_) return tensor;
  while (held_bytes_ + bytes > max_bytes_) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    held_bytes_ -= host_bytes(*oldest->second.tensor);
    entries_.erase(oldest);
  }
  entries_.emplace(key, Entry{tensor, uses_});
  held_bytes_ += bytes;
  return tensor;
}

}  // namespace agentcompile::tune
