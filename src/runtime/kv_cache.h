// The static KV cache: one buffer per state the module declares (kv.<layer>.k / .v, [L, KV, D]),
// allocated once for the largest context the user asked for. Nothing is reallocated while a model
// runs; a captured decode graph keeps these addresses. The sequence length lives on the device (the
// position counter every kernel reads), so the cache needs no host bookkeeping per step.
#pragma once

#include <map>
#include <string>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "gpu/cuda_driver.h"

namespace agentcompile::runtime {

class KvCache {
 public:
  // Bytes the cache takes for `rows` rows of every state.
  static int64_t bytes_needed(const ir::Module& module, int64_t rows);
  // Bytes one more row of context costs.
  static int64_t bytes_per_row(const ir::Module& module) { return bytes_needed(module, 1); }
  static Expected<KvCache> allocate(const ir::Module& module, int64_t rows);

  // Rows [first, first + rows) of every state, as a cache of `rows` rows: one sequence's slot of a
  // batched cache, which the single-sequence functions (prefill, decode) can run on. It owns nothing
  // (bytes() is 0) and must not outlive this cache.
  Expected<KvCache> rows_view(int64_t first, int64_t rows) const;

  int64_t rows() const { return rows_; }
  size_t bytes() const { return buffer_.bytes(); }
  Expected<CUdeviceptr> address(const std::string& state) const;

 private:
  struct State {
    size_t offset = 0;     // from base_
    size_t row_bytes = 0;  // one row of [L, ...]; 0 for a state of another shape
  };
  gpu::DeviceBuffer buffer_;  // empty in a view
  CUdeviceptr base_ = 0;
  int64_t rows_ = 0;
  std::map<std::string, State> states_;
};

}  // namespace agentcompile::runtime
