// Rope facts of a match (see rope_params.h).
#include "plan/families/rope_params.h"

#include <bit>
#include <cstdio>
#include <sstream>

#include "ir/interpreter_ops.h"

namespace agentcompile::plan {

namespace {

constexpr const char* kParametric[] = {"theta", "factor", "low_freq_factor", "high_freq_factor", "original_max_position"};

float scale_attr(const ir::Node& rope) { return static_cast<float>(rope.float_attr("scale", 1.0)); }

// The table as the kernels use it: every entry rounded to f32.
std::vector<float> table_attr(const ir::Node& rope) {
  std::vector<float> table;
  for (double value : rope.floats_attr("inv_freq")) table.push_back(static_cast<float>(value));
  return table;
}

// 8 hex digits of FNV-1a over the f32 bits of the table.
std::string table_digest(const Match& m) {
  uint64_t hash = 1469598103934665603ull;
  const int64_t n = m.facts.at("rope_table");
  for (int64_t i = 0; i < n; ++i) {
    const auto bits = static_cast<uint32_t>(m.facts.at("rope_inv_freq" + std::to_string(i)));
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= (bits >> (8 * byte)) & 0xffu;
      hash *= 1099511628211ull;
    }
  }
  char buffer[9];
  std::snprintf(buffer, sizeof(buffer), "%08x", static_cast<unsigned>(hash ^ (hash >> 32)));
  return buffer;
}

double fact_double(const Match& m, const std::string& key) { return std::bit_cast<double>(m.facts.at(key)); }

}  // namespace

bool same_rope(const ir::Node& a, const ir::Node& b) {
  if (a.has_attr("inv_freq") != b.has_attr("inv_freq") || scale_attr(a) != scale_attr(b)) return false;
  if (a.has_attr("inv_freq")) return table_attr(a) == table_attr(b);
  for (const char* key : kParametric)
    if (a.float_attr(key, -1) != b.float_attr(key, -1)) return false;
  return a.string_attr("scaling", "none") == b.string_attr("scaling", "none");
}

std::string add_rope_facts(const ir::Node& r, Match& m) {
  if (r.has_attr("inv_freq")) {
    const std::vector<float> table = table_attr(r);
    m.facts["rope_table"] = static_cast<int64_t>(table.size());
    for (size_t i = 0; i < table.size(); ++i) m.facts["rope_inv_freq" + std::to_string(i)] = std::bit_cast<uint32_t>(table[i]);
  } else {
    const std::string scaling = r.string_attr("scaling", "none");
    if (scaling != "none" && scaling != "llama3") return "RoPE scaling " + scaling + " is not implemented";
    m.facts["rope_theta_bits"] = std::bit_cast<int64_t>(r.float_attr("theta", 10000.0));
    m.facts["rope_llama3"] = scaling == "llama3";
    m.facts["rope_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("factor", 1.0));
    m.facts["rope_low_freq_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("low_freq_factor", 1.0));
    m.facts["rope_high_freq_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("high_freq_factor", 4.0));
    m.facts["rope_original_max_position_bits"] = std::bit_cast<int64_t>(r.float_attr("original_max_position", 8192.0));
  }
  if (scale_attr(r) != 1.f) m.facts["rope_scale_bits"] = std::bit_cast<uint32_t>(scale_attr(r));
  return "";
}

bool has_rope_facts(const Match& m) { return m.facts.count("rope_theta_bits") || m.facts.count("rope_table"); }

std::vector<float> rope_inv_freq_of(const Match& m, int64_t head_dim) {
  if (m.facts.count("rope_table")) {
    std::vector<float> table;
    for (int64_t i = 0; i < m.facts.at("rope_table"); ++i)
      table.push_back(std::bit_cast<float>(static_cast<uint32_t>(m.facts.at("rope_inv_freq" + std::to_string(i)))));
    return table;
  }
  ir::kernels::RopeParams rp;
  rp.theta = fact_double(m, "rope_theta_bits");
  rp.scaling = m.facts.at("rope_llama3") ? "llama3" : "none";
  rp.factor = fact_double(m, "rope_factor_bits");
  rp.low_freq_factor = fact_double(m, "rope_low_freq_factor_bits");
  rp.high_freq_factor = fact_double(m, "rope_high_freq_factor_bits");
  rp.original_max_position = fact_double(m, "rope_original_max_position_bits");
  return ir::kernels::rope_inv_freq(rp, head_dim);
}

float rope_scale_of(const Match& m) {
  auto it = m.facts.find("rope_scale_bits");
  return it == m.facts.end() ? 1.f : std::bit_cast<float>(static_cast<uint32_t>(it->second));
}

std::string rope_name(const Match& m) {
  std::ostringstream name;
  if (m.facts.count("rope_table")) {
    name << "invf" << table_digest(m);
  } else {
    const double theta = fact_double(m, "rope_theta_bits");
    name << "theta";
    if (theta == static_cast<double>(static_cast<int64_t>(theta)))
      name << static_cast<int64_t>(theta);
    else
      name << std::hex << m.facts.at("rope_theta_bits") << std::dec;
    if (m.facts.at("rope_llama3")) name << "_llama3";
  }
  if (m.facts.count("rope_scale_bits")) name << "_sc" << std::hex << m.facts.at("rope_scale_bits") << std::dec;
  return name.str();
}

std::string rope_description(const Match& m) {
  std::ostringstream text;
  if (m.facts.count("rope_table"))
    text << "table of the rope op (" << rope_name(m) << ")";
  else
    text << "theta " << fact_double(m, "rope_theta_bits") << ", scaling " << (m.facts.at("rope_llama3") ? "llama3" : "none");
  if (m.facts.count("rope_scale_bits")) text << ", cos and sin times " << rope_scale_of(m);
  return text.str();
}

int64_t rope_row_lanes(int64_t D, int64_t vec) {
  if (D % 2 != 0 || (D / 2) % vec != 0) return 0;
  int64_t lanes = 1;
  while (lanes < D / 2 / vec) lanes *= 2;
  return lanes <= 32 ? lanes : 0;
}

}  // namespace agentcompile::plan
