// Host tensors of a function call (see function_tensors.h).
#include "runtime/function_tensors.h"

#include <cstring>

namespace agentcompile::runtime {

namespace {

Expected<ir::DType> dtype_of(const std::string& name, const std::string& what) {
  auto dtype = ir::parse_dtype(name);
  if (!dtype || ir::is_quantized(*dtype) || *dtype == ir::DType::kI64)
    return error(ErrorCode::kUnsupported, what + " has dtype '" + name + "'; expected f32, f16, bf16, i32 or bool");
  return *dtype;
}

Expected<std::vector<TensorSpec>> specs_of(const ir::Function& f, const std::vector<ir::ValueId>& values,
                                            const std::vector<frontend::CapturedTensor>* names, int64_t run_tokens, const char* what) {
  std::vector<TensorSpec> specs;
  for (size_t i = 0; i < values.size(); ++i) {
    const ir::TensorType& type = f.type(values[i]);
    TensorSpec spec;
    spec.name = names && i < names->size() ? (*names)[i].name : f.value(values[i]).name;
    spec.dtype = std::string(ir::dtype_name(type.dtype));
    for (const ir::Dim& dim : type.shape) {
      if (dim.symbol == ir::Symbol::kT && run_tokens > 0) {
        spec.shape.push_back(run_tokens);
        continue;
      }
      if (!dim.is_static())
        return error(ErrorCode::kUnsupported, "@" + f.name + " " + what + " " + spec.name + " is " + type.to_string() +
                                                  ": only functions of static shapes (or T bound by the capture) run this way");
      spec.shape.push_back(dim.value);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

const frontend::CapturedFunction* captured(const ir::Function& f, const frontend::ModelSource& source) {
  return source.capture ? source.capture->function(f.name) : nullptr;
}

}  // namespace

size_t tensor_bytes(const TensorSpec& spec) {
  size_t count = 1;
  for (int64_t d : spec.shape) count *= static_cast<size_t>(d);
  auto dtype = ir::parse_dtype(spec.dtype);
  return dtype ? count * ir::dtype_size(*dtype) : 0;
}

Expected<std::vector<TensorSpec>> argument_specs(const ir::Function& function, const frontend::ModelSource& source) {
  const auto* c = captured(function, source);
  return specs_of(function, function.args, c ? &c->inputs : nullptr, c ? c->run_tokens : 0, "argument");
}

Expected<std::vector<TensorSpec>> result_specs(const ir::Function& function, const frontend::ModelSource& source) {
  const auto* c = captured(function, source);
  return specs_of(function, function.results, c ? &c->outputs : nullptr, c ? c->run_tokens : 0, "result");
}

Status check_inputs(const std::vector<Tensor>& inputs, const std::vector<TensorSpec>& specs) {
  if (inputs.size() != specs.size())
    return error(ErrorCode::kInvalidArgument, "the function takes " + std::to_string(specs.size()) + " inputs, " +
                                                  std::to_string(inputs.size()) + " were given");
  for (size_t i = 0; i < specs.size(); ++i) {
    const Tensor& t = inputs[i];
    const TensorSpec& s = specs[i];
    auto shape_text = [](const std::vector<int64_t>& shape) {
      std::string out = "[";
      for (size_t d = 0; d < shape.size(); ++d) out += (d ? ", " : "") + std::to_string(shape[d]);
      return out + "]";
    };
    if (t.dtype != s.dtype || t.shape != s.shape)
      return error(ErrorCode::kInvalidArgument, "input " + std::to_string(i) + " (" + s.name + ") is " + t.dtype + shape_text(t.shape) +
                                                    ", the function takes " + s.dtype + shape_text(s.shape));
    if (t.data.size() != tensor_bytes(s))
      return error(ErrorCode::kInvalidArgument, "input " + std::to_string(i) + " (" + s.name + ") holds " + std::to_string(t.data.size()) +
                                                    " bytes, " + s.dtype + shape_text(s.shape) + " takes " + std::to_string(tensor_bytes(s)));
  }
  return Status::ok();
}

Expected<ir::HostTensor> to_host_tensor(const Tensor& tensor) {
  AC_ASSIGN_OR_RETURN(ir::DType dtype, dtype_of(tensor.dtype, "tensor " + tensor.name));
  ir::HostTensor host;
  host.dtype = dtype;
  host.shape = tensor.shape;
  size_t count = 1;
  for (int64_t d : tensor.shape) count *= static_cast<size_t>(d);
  if (tensor.data.size() != count * ir::dtype_size(dtype))
    return error(ErrorCode::kInvalidArgument, "tensor " + tensor.name + " holds " + std::to_string(tensor.data.size()) + " bytes, not " +
                                                  std::to_string(count * ir::dtype_size(dtype)));
  const uint8_t* bytes = tensor.data.data();
  switch (dtype) {
    case ir::DType::kF32:
      host.f32.resize(count);
      if (count) std::memcpy(host.f32.data(), bytes, count * 4);
      break;
    case ir::DType::kF16:
    case ir::DType::kBF16:
      host.f32.resize(count);
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);
        host.f32[i] = dtype == ir::DType::kF16 ? ir::half_to_float(bits) : ir::bf16_to_float(bits);
      }
      break;
    case ir::DType::kI32:
      host.i32.resize(count);
      if (count) std::memcpy(host.i32.data(), bytes, count * 4);
      break;
    case ir::DType::kBool:
      host.i32.resize(count);
      for (size_t i = 0; i < count; ++i) host.i32[i] = bytes[i] != 0;
      break;
    default:
      return error(ErrorCode::kUnsupported, "tensor " + tensor.name + ": unsupported dtype " + tensor.dtype);
  }
  return host;
}

Expected<Tensor> from_host_tensor(const ir::HostTensor& value, const TensorSpec& spec) {
  AC_ASSIGN_OR_RETURN(ir::DType dtype, dtype_of(spec.dtype, "result " + spec.name));
  Tensor out;
  out.name = spec.name;
  out.dtype = spec.dtype;
  out.shape = spec.shape;
  const size_t count = static_cast<size_t>(value.elements());
  if (value.shape != spec.shape)
    return error(ErrorCode::kInternal, "result " + spec.name + " came back with another shape than its type says");
  out.data.resize(count * ir::dtype_size(dtype));
  uint8_t* bytes = out.data.data();
  const bool is_int = dtype == ir::DType::kI32 || dtype == ir::DType::kBool;
  if (is_int ? value.i32.size() != count : value.f32.size() != count)
    return error(ErrorCode::kInternal, "result " + spec.name + " holds " + (is_int ? "no integer" : "no float") + " values");
  switch (dtype) {
    case ir::DType::kF32:
      if (count) std::memcpy(bytes, value.f32.data(), count * 4);
      break;
    case ir::DType::kF16:
    case ir::DType::kBF16:
      for (size_t i = 0; i < count; ++i) {
        const uint16_t bits = dtype == ir::DType::kF16 ? ir::float_to_half(value.f32[i]) : ir::float_to_bf16(value.f32[i]);
        std::memcpy(bytes + 2 * i, &bits, 2);
      }
      break;
    case ir::DType::kI32:
      if (count) std::memcpy(bytes, value.i32.data(), count * 4);
      break;
    case ir::DType::kBool:
      for (size_t i = 0; i < count; ++i) bytes[i] = value.i32[i] != 0;
      break;
    default:
      return error(ErrorCode::kUnsupported, "result " + spec.name + ": unsupported dtype " + spec.dtype);
  }
  return out;
}

}  // namespace agentcompile::runtime
