// Weight upload: one allocation, tensors placed at 256-byte boundaries in declaration order.
#include "runtime/device_weights.h"

#include <cstring>

#include "frontend/safetensors.h"
#include "frontend/weight_formats.h"
#include "ir/quant.h"
#include "ir/shard_ranges.h"

namespace agentcompile::runtime {

namespace {

constexpr size_t kAlignment = 256;

// Quantized formats (ir/quant.h) take their own bytes: rows of packed elements with their scales.
size_t param_bytes(const ir::ParamDecl& p) { return static_cast<size_t>(ir::tensor_bytes(p.type)); }

size_t align_up(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// f32 values to the bytes of `dtype`.
Expected<std::vector<uint8_t>> encode(const std::vector<float>& values, ir::DType dtype, const std::string& name) {
  std::vector<uint8_t> out(values.size() * ir::dtype_size(dtype));
  switch (dtype) {
    case ir::DType::kF32:
      std::memcpy(out.data(), values.data(), out.size());
      return out;
    case ir::DType::kF16:
    case ir::DType::kBF16: {
      auto* bits = reinterpret_cast<uint16_t*>(out.data());
      for (size_t i = 0; i < values.size(); ++i)
        bits[i] = dtype == ir::DType::kF16 ? ir::float_to_half(values[i]) : ir::float_to_bf16(values[i]);
      return out;
    }
    default:
      return error(ErrorCode::kUnsupported, "parameter " + name + " is declared " + std::string(ir::dtype_name(dtype)) +
                                                "; the runtime uploads f32, f16 and bf16 weights");
  }
}

}  // namespace

int64_t DeviceWeights::bytes_needed(const ir::Module& module) {
  size_t total = 0;
  for (const auto& p : module.params)
    if (!p.is_alias()) total += align_up(param_bytes(p));
  return static_cast<int64_t>(total);
}

Expected<DeviceWeights> DeviceWeights::upload(const ir::Module& module, const frontend::WeightStore& store,
                                              const frontend::WeightStore* derived) {
  DeviceWeights weights;
  AC_ASSIGN_OR_RETURN(weights.buffer_, gpu::DeviceBuffer::allocate(static_cast<size_t>(std::max<int64_t>(bytes_needed(module), 16))));
  const auto* safetensors = dynamic_cast<const frontend::SafetensorsStore*>(&store);
  size_t offset = 0;
  std::vector<float> values;
  for (const auto& p : module.params) {
    if (p.is_alias()) continue;  // placed below, inside the parameter it names
    const size_t bytes = param_bytes(p);
    weights.offsets_[p.name] = offset;
    const std::string& stored = p.checkpoint_name();  // another tensor's values, for a copy (ir::ParamDecl::values_of)
    const bool from_derived = derived && derived->find(stored);
    const frontend::WeightStore& source = from_derived ? *derived : store;
    bool copied = false;
    if (ir::is_quantized(p.type.dtype)) {
      // The stored blocks (GGUF) or the checkpoint's values quantized to nearest, as the compiler's
      // reference interpreter read them (frontend::read_packed): uploaded packed, never dequantized.
      std::vector<uint8_t> packed;
      AC_TRY(frontend::read_packed(source, stored, p.type.dtype, packed));
      if (packed.size() != bytes)
        return error(ErrorCode::kMismatch, source.source() + ": " + p.name + " packs into " + std::to_string(packed.size()) +
                                               " bytes, the module expects " + std::to_string(bytes));
      AC_TRY(weights.buffer_.upload(packed.data(), bytes, offset));
      copied = true;
    }
    if (safetensors && !from_derived && !copied) {
      AC_ASSIGN_OR_RETURN(frontend::RawTensor raw, safetensors->raw(stored));
      if (raw.dtype == p.type.dtype) {
        // A rank's part of a sharded tensor (ir::ParamDecl::shard_ranges): only its runs are read out
        // of the mapped file, so a rank touches only its own pages.
        const size_t whole = static_cast<size_t>(ir::static_elements(p.source_shape())) * ir::dtype_size(p.type.dtype);
        if (raw.size != whole)
          return error(ErrorCode::kMismatch, store.source() + ": " + p.name + " holds " + std::to_string(raw.size) + " bytes, the module expects " +
                                                 std::to_string(whole));
        if (p.is_shard()) {
          std::vector<uint8_t> part(bytes);
          for (const ir::ShardRun& run : ir::shard_runs(p, ir::dtype_size(p.type.dtype)))
            std::memcpy(part.data() + run.target, raw.bytes + run.source, run.bytes);
          AC_TRY(weights.buffer_.upload(part.data(), bytes, offset));
        } else {
          AC_TRY(weights.buffer_.upload(raw.bytes, bytes, offset));
        }
        copied = true;
      }
    }
    if (!copied) {
      AC_TRY(source.read_f32(stored, values));
      if (p.is_shard()) values = ir::cut_shard(p, values);
      if (values.size() * ir::dtype_size(p.type.dtype) != bytes)
        return error(ErrorCode::kMismatch, source.source() + ": " + p.name + " has " + std::to_string(values.size()) + " elements, the module expects " +
                                               std::to_string(ir::static_elements(p.type.shape)));
      AC_ASSIGN_OR_RETURN(std::vector<uint8_t> encoded, encode(values, p.type.dtype, p.name));
      AC_TRY(weights.buffer_.upload(encoded.data(), encoded.size(), offset));
    }
    offset += align_up(bytes);
  }
  for (const auto& p : module.params) {
    if (!p.is_alias()) continue;
    const ir::ParamDecl* base = module.find_param(p.alias_of);
    auto it = weights.offsets_.find(p.alias_of);
    if (!base || it == weights.offsets_.end())
      return error(ErrorCode::kInternal, "parameter " + p.name + " aliases " + p.alias_of + ", which was not uploaded");
    const int64_t rows = p.type.shape[0].value;
    const size_t row_bytes = rows > 0 ? param_bytes(p) / static_cast<size_t>(rows) : 0;
    weights.offsets_[p.name] = it->second + static_cast<size_t>(p.alias_row) * row_bytes;
  }
  return weights;
}

Expected<CUdeviceptr> DeviceWeights::address(const std::string& name) const {
  auto it = offsets_.find(name);
  if (it == offsets_.end()) return error(ErrorCode::kNotFound, "no weight named " + name + " was uploaded");
  return buffer_.ptr() + it->second;
}

}  // namespace agentcompile::runtime
