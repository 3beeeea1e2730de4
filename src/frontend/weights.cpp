// Weight-store lookups and the check of a store against a module's parameters.
#include "frontend/weights.h"

namespace agentcompile::frontend {

const TensorInfo* WeightStore::find(const std::string& name) const {
  for (const auto& info : tensors())
    if (info.name == name) return &info;
  return nullptr;
}

Status WeightStore::read_stored(const std::string& name, ir::DType format, std::vector<uint8_t>&) const {
  return error(ErrorCode::kUnsupported, source() + ": tensor " + tensor_label(name) + " is not stored as " +
                                            std::string(ir::dtype_name(format)) + "; this store holds no quantized tensors");
}

void MemoryStore::put(const std::string& name, ir::DType dtype, std::vector<int64_t> shape, std::vector<float> values) {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name) {
      tensors_[i] = TensorInfo{name, dtype, std::move(shape)};
      values_[i] = std::move(values);
      return;
    }
  tensors_.push_back(TensorInfo{name, dtype, std::move(shape)});
  values_.push_back(std::move(values));
}

Status MemoryStore::read_f32(const std::string& name, std::vector<float>& out) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name) {
      out = values_[i];
      return Status::ok();
    }
  return error(ErrorCode::kNotFound, source_ + ": no tensor '" + name + "'");
}

Status check_weights(const ir::Module& module, const WeightStore& store) {
  for (const auto& param : module.params) {
    if (param.is_alias() || param.is_copy()) continue;  // rows or values of another parameter: checked through that one
    const TensorInfo* info = store.find(param.name);
    if (!info) return error(ErrorCode::kNotFound, store.source() + ": missing tensor '" + param.name + "'");
    std::vector<int64_t> expected;  // a rank's part of a sharded tensor is checked against the whole tensor
    for (const auto& dim : param.source_shape()) expected.push_back(dim.value);
    if (info->shape != expected) {
      auto text = [](const std::vector<int64_t>& shape) {
        std::string out = "[";
        for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
        return out + "]";
      };
      return error(ErrorCode::kMismatch, store.source() + ": tensor '" + param.name + "' has shape " +
                                             text(info->shape) + " but the config implies " + text(expected));
    }
    if (store.dtypes_are_exact() && info->dtype != param.type.dtype)
      return error(ErrorCode::kMismatch, store.source() + ": tensor '" + param.name + "' is " +
                                             std::string(ir::dtype_name(info->dtype)) + " but the config says " +
                                             std::string(ir::dtype_name(param.type.dtype)));
  }
  return Status::ok();
}

}  // namespace agentcompile::frontend
