// Dimensions and tensor types: printing and symbol resolution.
#include "ir/shape.h"

namespace agentcompile::ir {

std::string Dim::to_string() const {
  switch (symbol) {
    case Symbol::kT: return "T";
    case Symbol::kL: return "L";
    case Symbol::kNone: break;
  }
  return std::to_string(value);
}

std::string shape_to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i].to_string();
  }
  return out + "]";
}

bool shape_is_static(const Shape& shape) {
  for (const Dim& dim : shape)
    if (!dim.is_static()) return false;
  return true;
}

int64_t static_elements(const Shape& shape) {
  int64_t count = 1;
  for (const Dim& dim : shape)
    if (dim.is_static()) count *= dim.value;
  return count;
}

int64_t SymbolBindings::resolve(const Dim& dim) const {
  switch (dim.symbol) {
    case Symbol::kT: return T;
    case Symbol::kL: return L;
    case Symbol::kNone: break;
  }
  return dim.value;
}

std::vector<int64_t> SymbolBindings::resolve(const Shape& shape) const {
  std::vector<int64_t> sizes;
  sizes.reserve(shape.size());
  for (const Dim& dim : shape) sizes.push_back(resolve(dim));
  return sizes;
}

std::string TensorType::to_string() const { return std::string(dtype_name(dtype)) + shape_to_string(shape); }

}  // namespace agentcompile::ir
