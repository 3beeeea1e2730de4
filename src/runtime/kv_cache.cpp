// KV-cache allocation: states back to back, each at a 256-byte boundary.
#include "runtime/kv_cache.h"

namespace agentcompile::runtime {

namespace {

size_t state_bytes(const ir::StateDecl& s, int64_t rows) {
  const std::vector<int64_t> dims = ir::SymbolBindings{1, rows}.resolve(s.type.shape);
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  return (count * ir::dtype_size(s.type.dtype) + 255) / 256 * 256;
}

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
    cache.offsets_[s.name] = offset;
    offset += state_bytes(s, rows);
  }
  auto buffer = gpu::DeviceBuffer::allocate(std::max<size_t>(offset, 16));
  if (!buffer)
    return error(ErrorCode::kResourceExhausted, "allocating the KV cache for " + std::to_string(rows) + " tokens (" +
                                                    std::to_string(offset >> 20) + " MiB): " + buffer.status().message());
  cache.buffer_ = std::move(*buffer);
  AC_TRY(cache.buffer_.fill_bytes(0));
  return cache;
}

Expected<CUdeviceptr> KvCache::address(const std::string& state) const {
  auto it = offsets_.find(state);
  if (it == offsets_.end()) return error(ErrorCode::kNotFound, "the KV cache has no state named " + state);
  return buffer_.ptr() + it->second;
}

}  // namespace agentcompile::runtime
