// The model's weights on the device: every parameter the module declares, uploaded once into one
// allocation, in the dtype and layout the IR declares for it (which is what the selected kernels
// read: Hugging Face [N, K] rows for linear layers, so a GEMV streams each output's row; fused QKV
// and gate/up kernels take their weights as separate slots and read them in one launch). A
// safetensors tensor already in that dtype is copied byte for byte; a parameter in a quantized format
// (ir/quant.h) is uploaded packed: GGUF blocks as the file holds them, a checkpoint's matrix quantized
// to nearest on the host (frontend::read_packed, the bytes the compiler validated against); anything
// else (a GGUF tensor dequantized with --dequantize, a checkpoint in another float type) is converted
// on the host first. A parameter alias (rows
// of a fused weight, ir::ParamDecl::alias_of) takes no memory of its own: its address is inside the
// parameter it names. Parameters no checkpoint holds (computed once at load by the module's @init,
// runtime/derived_weights.h) come from a second store. A rank's part of a sharded parameter
// (ir::ParamDecl::shard_ranges, src/shard) is cut out of the checkpoint's whole tensor: from a
// safetensors file, only the part's byte runs of the mapping are read.
#pragma once

#include <map>
#include <string>

#include "agentcompile/status.h"
#include "frontend/weights.h"
#include "ir/graph.h"
#include "gpu/cuda_driver.h"

namespace agentcompile::runtime {

class DeviceWeights {
 public:
  // Bytes the module's parameters take on the device (aligned as they will be placed).
  static int64_t bytes_needed(const ir::Module& module);
  // `derived`, when given, supplies the parameters it holds in place of `store`.
  static Expected<DeviceWeights> upload(const ir::Module& module, const frontend::WeightStore& store,
                                        const frontend::WeightStore* derived = nullptr);

  // Device address of a parameter; error names the parameter when the module does not declare it.
  Expected<CUdeviceptr> address(const std::string& name) const;
  size_t bytes() const { return buffer_.bytes(); }

 private:
  gpu::DeviceBuffer buffer_;
  std::map<std::string, size_t> offsets_;
};

}  // namespace agentcompile::runtime
