// The RoPE inverse-frequency table that rope_kv and the attention prologue render (renderers.h).
#include <bit>
#include <sstream>

#include "codegen/render.h"
#include "codegen/renderers/renderers.h"
#include "ir/interpreter_ops.h"

namespace agentcompile::codegen {

std::string rope_inv_freq_table(const plan::Match& m, int64_t head_dim) {
  if (!m.facts.count("rope_theta_bits")) return "";
  auto fact_double = [&](const std::string& key) { return std::bit_cast<double>(m.facts.at(key)); };
  ir::kernels::RopeParams rp;
  rp.theta = fact_double("rope_theta_bits");
  rp.scaling = m.facts.at("rope_llama3") ? "llama3" : "none";
  rp.factor = fact_double("rope_factor_bits");
  rp.low_freq_factor = fact_double("rope_low_freq_factor_bits");
  rp.high_freq_factor = fact_double("rope_high_freq_factor_bits");
  rp.original_max_position = fact_double("rope_original_max_position_bits");
  const std::vector<float> inv_freq = ir::kernels::rope_inv_freq(rp, head_dim);
  std::ostringstream src;
  src << "// inv_freq [D/2]: theta " << rp.theta << ", scaling " << rp.scaling << "\n"
      << "__device__ const float ac_inv_freq[" << inv_freq.size() << "] = {";
  for (size_t i = 0; i < inv_freq.size(); ++i) src << (i % 4 == 0 ? "\n    " : " ") << float_literal(inv_freq[i]) << ",";
  src << "\n};\n\n";
  return src.str();
}

}  // namespace agentcompile::codegen
