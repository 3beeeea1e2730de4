// A source of named weight tensors (a safetensors checkpoint or a GGUF file), seen through
// Hugging Face tensor names so that every architecture builder works with either format.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace agentcompile::frontend {

struct TensorInfo {
  std::string name;             // Hugging Face name
  ir::DType dtype;              // as stored (may be quantized for GGUF)
  std::vector<int64_t> shape;   // row-major, outermost first (Hugging Face order)
};

class WeightStore {
 public:
  virtual ~WeightStore() = default;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  const TensorInfo* find(const std::string& name) const;
  // Reads one tensor as f32, dequantizing as needed. Errors name the file and the tensor.
  virtual Status read_f32(const std::string& name, std::vector<float>& out) const = 0;
  // The tensor's bytes as stored, when it is stored in the quantized `format` (GGUF blocks, rows in
  // Hugging Face order: ir/quant.h's layout); kUnsupported for stores that hold no quantized tensors.
  virtual Status read_stored(const std::string& name, ir::DType format, std::vector<uint8_t>& out) const;
  // What the store was read from, for messages.
  virtual std::string source() const = 0;
  // A tensor as messages name it: "'model.norm.weight'", and where the file spells it otherwise,
  // that name too ("'model.norm.weight' (GGUF tensor 'output_norm.weight')").
  virtual std::string tensor_label(const std::string& name) const { return "'" + name + "'"; }
  // True when tensors keep their checkpoint dtype (safetensors); false when stored dtypes are
  // quantized encodings of the model's weights (GGUF), so dtype checks against the config are skipped.
  virtual bool dtypes_are_exact() const = 0;
};

// Tensors held in memory as f32 values (parameters computed at load time, tests).
class MemoryStore : public WeightStore {
 public:
  explicit MemoryStore(std::string source) : source_(std::move(source)) {}
  // Adds (or replaces) a tensor; `values` holds the product of `shape` elements.
  void put(const std::string& name, ir::DType dtype, std::vector<int64_t> shape, std::vector<float> values);
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  Status read_f32(const std::string& name, std::vector<float>& out) const override;
  std::string source() const override { return source_; }
  bool dtypes_are_exact() const override { return true; }

 private:
  std::string source_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::vector<float>> values_;  // per entry of tensors_
};

// Checks that the store holds every parameter of `module` with the declared shape (and, when the
// store's dtypes are exact, the declared dtype). Errors name the store, the tensor and what disagrees.
Status check_weights(const ir::Module& module, const WeightStore& store);

}  // namespace agentcompile::frontend
