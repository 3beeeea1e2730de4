// Rope specs and their facts (see rope_params.h).
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
std::string table_digest(const std::vector<float>& table) {
  uint64_t hash = 1469598103934665603ull;
  for (float entry : table) {
    const auto bits = std::bit_cast<uint32_t>(entry);
    for (int byte = 0; byte < 4; ++byte) {
      hash ^= (bits >> (8 * byte)) & 0xffu;
      hash *= 1099511628211ull;
    }
  }
  char buffer[9];
  std::snprintf(buffer, sizeof(buffer), "%08x", static_cast<unsigned>(hash ^ (hash >> 32)));
  return buffer;
}

}  // namespace

bool same_rope(const ir::Node& a, const ir::Node& b) {
  if (a.has_attr("inv_freq") != b.has_attr("inv_freq") || scale_attr(a) != scale_attr(b)) return false;
  if (a.has_attr("inv_freq")) return table_attr(a) == table_attr(b);
  for (const char* key : kParametric)
    if (a.float_attr(key, -1) != b.float_attr(key, -1)) return false;
  return a.string_attr("scaling", "none") == b.string_attr("scaling", "none");
}

std::optional<RopeSpec> rope_spec(const ir::Node& r, std::string* why) {
  RopeSpec spec;
  if (r.has_attr("inv_freq")) {
    spec.table = table_attr(r);
  } else {
    const std::string scaling = r.string_attr("scaling", "none");
    if (scaling != "none" && scaling != "llama3") {
      if (why) *why = "RoPE scaling " + scaling + " is not implemented";
      return std::nullopt;
    }
    spec.theta = r.float_attr("theta", 10000.0);
    spec.llama3 = scaling == "llama3";
    spec.factor = r.float_attr("factor", 1.0);
    spec.low_freq_factor = r.float_attr("low_freq_factor", 1.0);
    spec.high_freq_factor = r.float_attr("high_freq_factor", 4.0);
    spec.original_max_position = r.float_attr("original_max_position", 8192.0);
  }
  spec.scale = scale_attr(r);
  return spec;
}

void add_rope_facts(const RopeSpec& rope, Match& m) {
  if (rope.table) {
    m.facts["rope_table"] = static_cast<int64_t>(rope.table->size());
    for (size_t i = 0; i < rope.table->size(); ++i) m.facts["rope_inv_freq" + std::to_string(i)] = std::bit_cast<uint32_t>((*rope.table)[i]);
  } else {
    m.facts["rope_theta_bits"] = std::bit_cast<int64_t>(rope.theta);
    m.facts["rope_llama3"] = rope.llama3;
    m.facts["rope_factor_bits"] = std::bit_cast<int64_t>(rope.factor);
    m.facts["rope_low_freq_factor_bits"] = std::bit_cast<int64_t>(rope.low_freq_factor);
    m.facts["rope_high_freq_factor_bits"] = std::bit_cast<int64_t>(rope.high_freq_factor);
    m.facts["rope_original_max_position_bits"] = std::bit_cast<int64_t>(rope.original_max_position);
  }
  if (rope.scale != 1.f) m.facts["rope_scale_bits"] = std::bit_cast<uint32_t>(rope.scale);
}

std::vector<float> rope_inv_freq_of(const RopeSpec& rope, int64_t head_dim) {
  if (rope.table) return *rope.table;
  ir::kernels::RopeParams rp;
  rp.theta = rope.theta;
  rp.scaling = rope.llama3 ? "llama3" : "none";
  rp.factor = rope.factor;
  rp.low_freq_factor = rope.low_freq_factor;
  rp.high_freq_factor = rope.high_freq_factor;
  rp.original_max_position = rope.original_max_position;
  return ir::kernels::rope_inv_freq(rp, head_dim);
}

std::string rope_name(const RopeSpec& rope) {
  std::ostringstream name;
  if (rope.table) {
    name << "invf" << table_digest(*rope.table);
  } else {
    name << "theta";
    if (rope.theta == static_cast<double>(static_cast<int64_t>(rope.theta)))
      name << static_cast<int64_t>(rope.theta);
    else
      name << std::hex << std::bit_cast<int64_t>(rope.theta) << std::dec;
    if (rope.llama3) name << "_llama3";
  }
  if (rope.scale != 1.f) name << "_sc" << std::hex << int64_t{std::bit_cast<uint32_t>(rope.scale)} << std::dec;
  return name.str();
}

std::string rope_description(const RopeSpec& rope) {
  std::ostringstream text;
  if (rope.table)
    text << "table of the rope op (" << rope_name(rope) << ")";
  else
    text << "theta " << rope.theta << ", scaling " << (rope.llama3 ? "llama3" : "none");
  if (rope.scale != 1.f) text << ", cos and sin times " << rope.scale;
  return text.str();
}

int64_t rope_row_lanes(int64_t D, int64_t vec) {
  if (D % 2 != 0 || (D / 2) % vec != 0) return 0;
  int64_t lanes = 1;
  while (lanes < D / 2 / vec) lanes *= 2;
  return lanes <= 32 ? lanes : 0;
}

}  // namespace agentcompile::plan
