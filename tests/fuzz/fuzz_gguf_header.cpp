// libFuzzer harness for the GGUF parser: any bytes must yield a GgufFile or an error, never a crash, a
// read out of bounds or a huge allocation. On success it also derives the model config and
// dequantizes every (small) tensor, which reads exactly the byte ranges the parser vouched for.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/quant.h"
#include "frontend/gguf.h"
#include "frontend/gguf_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agentcompile::frontend;
  auto parsed = parse_gguf(data, size, "fuzz.gguf");
  if (!parsed) return 0;
  auto config = gguf_model_config(*parsed, "fuzz.gguf");
  (void)config;
  std::vector<float> values;
  for (const GgufTensorInfo& tensor : parsed->tensors) {
    if (tensor.elements == 0 || tensor.elements > (int64_t{1} << 20)) continue;  // keep each run fast
    values.resize(static_cast<size_t>(tensor.elements));
    const agentcompile::Status status = agentcompile::ir::dequantize(tensor.dtype, data + parsed->data_offset + tensor.offset, tensor.elements,
                                     values.data());
    if (!status.is_ok()) __builtin_trap();  // the parser promised a whole number of blocks
  }
  return 0;
}
