// Dimensions and tensor types. A dimension is a concrete size or a symbol: `T` (tokens in this call)
// or `L` (cache length, the rows of a KV cache a call may read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace agentcompile::ir {

enum class Symbol : uint8_t { kNone = 0, kT, kL };

struct Dim {
  int64_t value = 0;            // meaningful when symbol == kNone
  Symbol symbol = Symbol::kNone;

  static Dim of(int64_t v) { return Dim{v, Symbol::kNone}; }
  static Dim T() { return Dim{0, Symbol::kT}; }
  static Dim L() { return Dim{0, Symbol::kL}; }

  bool is_static() const { return symbol == Symbol::kNone; }
  bool operator==(const Dim& other) const { return value == other.value && symbol == other.symbol; }
  bool operator!=(const Dim& other) const { return !(*this == other); }
  std::string to_string() const;
};

using Shape = std::vector<Dim>;

std::string shape_to_string(const Shape& shape);  // "[T, 16, 128]"
bool shape_is_static(const Shape& shape);
// Product of static dims; callers check shape_is_static first (symbolic dims count as 1).
int64_t static_elements(const Shape& shape);

// Concrete sizes for a call: what T and L stand for.
struct SymbolBindings {
  int64_t T = 1;
  int64_t L = 1;
  int64_t resolve(const Dim& dim) const;
  std::vector<int64_t> resolve(const Shape& shape) const;
};

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;
  bool operator==(const TensorType& other) const { return dtype == other.dtype && shape == other.shape; }
  bool operator!=(const TensorType& other) const { return !(*this == other); }
  std::string to_string() const;  // "f16[T, 2048]"
};

}  // namespace agentcompile::ir
