// The RoPE inverse-frequency table that rope_kv and the attention prologue render (rope_table.h).
#include "codegen/renderers/rope_table.h"

#include <sstream>

#include "codegen/render.h"

namespace agentcompile::codegen {

std::string rope_inv_freq_table(const plan::RopeSpec& rope, int64_t head_dim) {
  const std::vector<float> inv_freq = plan::rope_inv_freq_of(rope, head_dim);
  std::ostringstream src;
  src << "// inv_freq [D/2]: " << plan::rope_description(rope) << "\n"
      << "__device__ const float ac_inv_freq[" << inv_freq.size() << "] = {";
  for (size_t i = 0; i < inv_freq.size(); ++i) src << (i % 4 == 0 ? "\n    " : " ") << float_literal(inv_freq[i]) << ",";
  src << "\n};\n\n";
  return src.str();
}

}  // namespace agentcompile::codegen
