// A region's weights are drawn from what they are, not from where they sit: a (dtype, shape, kind,
// occurrence) key decides the values, so regions that have the same weight (the embedding table in
// prefill and decode, tied to the lm_head) get the same tensor, and a compile draws it once. The
// weights of one region stay distinct draws (the occurrence counts equal keys within the region), so
// a kernel that reads one weight for another is still caught.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ir/dtype.h"
#include "tune/host_data.h"

namespace agentcompile::tune {

struct WeightKey {
  ir::DType dtype = ir::DType::kF32;
  std::vector<int64_t> shape;
  bool norm = false;    // a norm's scale: N(1, 0.2); else N(0, 1) over sqrt(K) for matrices, N(0, 0.1^2) otherwise
  int occurrence = 0;   // how many weights of the region with the same dtype, shape and kind come before it
  auto operator<=>(const WeightKey&) const = default;
};

// The weight of `key`, drawn afresh (the same values every time).
TestTensor draw_weight(const WeightKey& key);

// The weights drawn so far in a compile, by key, up to `max_bytes` of host memory (values and bytes);
// the least recently used go first, and a weight larger than the bound is drawn and not kept. One
// thread uses a cache at a time (the admission worker).
class WeightCache {
 public:
  static constexpr size_t kDefaultBytes = size_t{8} << 30;
  explicit WeightCache(size_t max_bytes = kDefaultBytes) : max_bytes_(max_bytes) {}

  std::shared_ptr<const TestTensor> get(const WeightKey& key);
  size_t held_bytes() const { return held_bytes_; }
  size_t draws() const { return draws_; }  // misses: the weights drawn rather than found

 private:
  struct Entry {
    std::shared_ptr<const TestTensor> tensor;
    uint64_t last_use = 0;
  };
  size_t max_bytes_;
  size_t held_bytes_ = 0;
  size_t draws_ = 0;
  uint64_t uses_ = 0;
  std::map<WeightKey, Entry> entries_;
};

}  // namespace agentcompile::tune
