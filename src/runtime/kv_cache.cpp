// KV-cache allocation: states back to back, each at a 256-byte boundary.
#include "runtime/kv_cache.h"

namespace agentcompile::runtime {

namespace {

size_t state_elements(const ir::StateDecl& s, int64_t rows) {
  const std::vector<int64_t> dims = ir::SymbolBindings{1, rows}.resolve(s.type.shape);
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  return count;
}

size_t state_bytes(const ir::StateDecl& s, int64_t rows) { return (state_elements(s, rows) * ir::dtype_size(s.type.dtype) + 255) / 256 * 256; }

}  // namespace

int64_t KvCache::bytes_needed(const ir::Module& module, int64_t rows) {
  size_t total = 0;
  for (const auto& s : module.states) total += state_bytes(s, rows);
  return static_cast<int64_t>(total);
}

Expected<KvCache> KvCache::allocate(const ir::Module& module, int64_t rows) {
  if (rows <= 0) return error(ErrorCode::kInvalidArgument, "a KV cache needs at least one row");
  KvCache cache;
  cache.rows_ = rows;
  size_t offset = 0;
  for (const auto& s : module.states) {
    const bool by_rows = !s.type.shape.empty() && !s.type.shape[0].is_static() && s.type.shape[0].symbol == ir::Symbol::kL;
    cache.states_[s.name] = State{offset, by_rows ? state_elements(s, 1) * ir::dtype_size(s.type.dtype) : 0};
    offset += state_bytes(s, rows);
  }
  auto buffer = gpu::DeviceBuffer::allocate(std::max<size_t>(offset, 16));
  if (!buffer)
    return error(ErrorCode::kResourceExhausted, "allocating the KV cache for " + std::to_string(rows) + " tokens (" +
                                                    std::to_string(offset >> 20) + " MiB): " + buffer.status().message());
  cache.buffer_ = std::move(*buffer);
  cache.base_ = cache.buffer_.ptr();
  AC_TRY(cache.buffer_.fill_bytes(0));
  return cache;
}

Expected<KvCache> KvCache::rows_view(int64_t first, int64_t rows) const {
  if (first < 0 || rows < 1 || first + rows > rows_)
    return error(ErrorCode::kInvalidArgument, "rows " + std::to_string(first) + ".." + std::to_string(first + rows - 1) +
                                                  " are outside a KV cache of " + std::to_string(rows_) + " rows");
  KvCache view;
  view.base_ = base_;
  view.rows_ = rows;
  for (const auto& [name, state] : states_) {
    if (state.row_bytes == 0) return error(ErrorCode::kUnsupported, "state " + name + " is not [L, ...]: its rows cannot be split into slots");
    view.states_[name] = State{state.offset + static_cast<size_t>(first) * state.row_bytes, state.row_bytes};
  }
  return view;
}

Expected<CUdeviceptr> KvCache::address(const std::string& state) const {
  auto it = states_.find(state);
  if (it == states_.end()) return error(ErrorCode::kNotFound, "the KV cache has no state named " + state);
  return base_ + it->second.offset;
}

}  // namespace agentcompile::runtime
