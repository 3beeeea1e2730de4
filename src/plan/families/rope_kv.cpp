// RoPE + QK-norm + KV-append family (src/kernels/rope_kv.cuh): fusion regions made only of
// per-head rmsnorm, rope and kv_append, in f32, f16 or bf16. Planning side: the region is read as
// up to three streams (input -> rmsnorm? -> rope? -> output and/or cache append), the parameter
// space and the launch geometry (one row per token and head; the grid grows with T).
// codegen/renderers/rope_kv.cpp writes the source.
#include <algorithm>
#include <bit>
#include <sstream>

#include "plan/families.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

constexpr int kMaxStreams = 3;

struct Stream {
  ir::ValueId source = ir::kNoValue;  // the region input the stream reads
  ir::ValueId last = ir::kNoValue;    // the latest value computed on it
  const ir::Node* norm = nullptr;
  const ir::Node* rope = nullptr;
  const ir::Node* append = nullptr;
};

bool same_rope_attrs(const ir::Node& a, const ir::Node& b) {
  for (const char* key : {"theta", "factor", "low_freq_factor", "high_freq_factor", "original_max_position"})
    if (a.float_attr(key, -1) != b.float_attr(key, -1)) return false;
  return a.string_attr("scaling", "none") == b.string_attr("scaling", "none");
}

// A row of D elements is D/2/vec lanes, which must tile a warp.
bool row_layout_fits(int64_t D, int vec) {
  if (D % 2 != 0 || (D / 2) % vec != 0) return false;
  const int64_t lanes = D / 2 / vec;
  return lanes <= 32 && 32 % lanes == 0;
}
bool any_row_layout(int64_t D) { return row_layout_fits(D, 2) || row_layout_fits(D, 4) || row_layout_fits(D, 8); }

class RopeKvFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "rope_kv"; }
  std::string template_file() const override { return "rope_kv.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kFusion) return std::nullopt;
    std::vector<Stream> streams;
    ir::ValueId pos = ir::kNoValue;
    const ir::Node* rope_attrs = nullptr;
    const ir::Node* norm_attrs = nullptr;
    bool any_rope_or_append = false;
    auto stream_of = [&](ir::ValueId v) -> Stream* {
      for (auto& s : streams)
        if (s.last == v) return &s;
      return nullptr;
    };
    auto start = [&](ir::ValueId v) -> Stream* {
      if (ctx.slot_of(v).rfind("in", 0) != 0 || static_cast<int>(streams.size()) == kMaxStreams) return nullptr;
      streams.push_back(Stream{v, v});
      return &streams.back();
    };
    auto same_pos = [&](ir::ValueId p) {
      if (ctx.slot_of(p).rfind("in", 0) != 0 || ctx.function->type(p).dtype != ir::DType::kI32) return false;
      if (pos == ir::kNoValue) pos = p;
      return pos == p;
    };
    for (size_t i = 0; i < ctx.size(); ++i) {
      const ir::Node& n = ctx.node(static_cast<int>(i));
      Stream* s = n.operands.empty() ? nullptr : stream_of(n.operands[0]);
      if (n.op == OpKind::kRmsNorm) {
        if (s || !(s = start(n.operands[0]))) return std::nullopt;  // a norm only opens a stream
        if (norm_attrs && norm_attrs->float_attr("eps") != n.float_attr("eps")) return std::nullopt;
        norm_attrs = &n;
        s->norm = &n;
      } else if (n.op == OpKind::kRope) {
        if (s && (s->rope || s->append)) return std::nullopt;
        if (!s && !(s = start(n.operands[0]))) return std::nullopt;
        if (!same_pos(n.operands[1])) return std::nullopt;
        if (rope_attrs && !same_rope_attrs(*rope_attrs, n)) return std::nullopt;
        rope_attrs = &n;
        s->rope = &n;
      } else if (n.op == OpKind::kKvAppend) {
        if (s && s->append) return std::nullopt;
        if (!s && !(s = start(n.operands[0]))) return std::nullopt;
        if (!same_pos(n.operands[1])) return std::nullopt;
        s->append = &n;
      } else {
        return std::nullopt;
      }
      any_rope_or_append |= n.op != OpKind::kRmsNorm;
      if (n.op != OpKind::kKvAppend) s->last = n.result;
    }
    if (!any_rope_or_append || streams.empty()) return std::nullopt;  // a plain norm region is not ours

    Match m;
    const auto& first_type = ctx.function->type(streams.front().source);
    if (first_type.shape.size() != 3 || !first_type.shape[2].is_static()) return std::nullopt;
    const int64_t D = first_type.shape[2].value;
    m.dtype = first_type.dtype;
    m.out_dtype = m.dtype;
    if (m.dtype != ir::DType::kF16 && m.dtype != ir::DType::kBF16 && m.dtype != ir::DType::kF32) return std::nullopt;
    if (!any_row_layout(D)) return std::nullopt;
    int64_t rows = 0;
    bool norms = false, ropes = false, appends = false;
    for (size_t i = 0; i < streams.size(); ++i) {
      const Stream& s = streams[i];
      const std::string k = std::to_string(i);
      const auto& type = ctx.function->type(s.source);
      if (type.shape.size() != 3 || type.shape[0] != first_type.shape[0] || type.shape[2] != first_type.shape[2] ||
          !type.shape[1].is_static() || type.dtype != m.dtype)
        return std::nullopt;
      m.facts["heads" + k] = type.shape[1].value;
      rows += type.shape[1].value;
      m.roles["x" + k] = ctx.slot_of(s.source);
      if (s.norm) {
        const std::string w = ctx.slot_of(s.norm->operands[1]);
        if (w.rfind("w", 0) != 0 || ctx.function->type(s.norm->operands[1]).shape != ir::Shape{ir::Dim::of(D)}) return std::nullopt;
        m.roles["norm" + k] = w;
        norms = true;
        // The norm's own result must stay inside unless it is the stream's last value.
        if (s.norm->result != s.last && !ctx.slot_of(s.norm->result).empty()) return std::nullopt;
      }
      m.facts["rope" + k] = s.rope != nullptr;
      ropes |= s.rope != nullptr;
      const std::string out = s.last != s.source ? ctx.slot_of(s.last) : "";
      if (!out.empty()) {
        if (out.rfind("out", 0) != 0) return std::nullopt;
        m.roles["y" + k] = out;
      }
      if (s.append) {
        const auto& states = ctx.region->states;
        auto it = std::find(states.begin(), states.end(), s.append->string_attr("state"));
        if (it == states.end()) return std::nullopt;
        const auto& cache = ctx.function->type(s.append->result);  // [L, H, D]
        if (cache.dtype != m.dtype || cache.shape.size() != 3 || cache.shape[1] != type.shape[1] || cache.shape[2] != type.shape[2])
          return std::nullopt;
        m.roles["cache" + k] = "state" + std::to_string(it - states.begin());
        appends = true;
      }
      if (out.empty() && !s.append) return std::nullopt;  // computed but never leaves: not a region we understand
    }
    m.roles["pos"] = ctx.slot_of(pos);
    m.facts["streams"] = static_cast<int64_t>(streams.size());
    m.facts["rows"] = rows;
    m.facts["D"] = D;
    if (first_type.shape[0].is_static()) m.facts["tokens"] = first_type.shape[0].value;
    if (norm_attrs) m.facts["eps_bits"] = std::bit_cast<int64_t>(norm_attrs->float_attr("eps"));
    if (rope_attrs) {
      const ir::Node& r = *rope_attrs;
      m.facts["rope_theta_bits"] = std::bit_cast<int64_t>(r.float_attr("theta", 10000.0));
      m.facts["rope_llama3"] = r.string_attr("scaling", "none") == "llama3";
      if (r.string_attr("scaling", "none") != "none" && r.string_attr("scaling", "none") != "llama3") return std::nullopt;
      m.facts["rope_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("factor", 1.0));
      m.facts["rope_low_freq_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("low_freq_factor", 1.0));
      m.facts["rope_high_freq_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("high_freq_factor", 4.0));
      m.facts["rope_original_max_position_bits"] = std::bit_cast<int64_t>(r.float_attr("original_max_position", 8192.0));
    }
    m.variant = std::string(norms ? "qknorm_" : "") + (ropes ? "rope_" : "") + (appends ? "append" : "out");
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t D = m.facts.at("D"), rows = m.facts.at("rows");
    const bool decode = m.facts.count("tokens") && m.facts.at("tokens") == 1;
    for (int vec : {2, 4, 8}) {
      if (!row_layout_fits(D, vec)) continue;
      const int64_t lanes = D / 2 / vec;
      for (int threads : {64, 128, 256}) {
        if (threads > device.max_threads_per_block) continue;
        const int64_t rows_per_block = threads / lanes;
        Choice c;
        c.params = {{"vec", vec}, {"threads", threads}};
        // Heuristic: 16-byte accesses first (f32: 8 values are two of them); for one token the rows
        // are few, so small blocks spread them over more SMs; for prompts, larger blocks.
        const int64_t bytes = vec * static_cast<int64_t>(ir::dtype_size(m.dtype));
        const double access = bytes == 16 ? 1.0 : bytes == 32 ? 0.95 : bytes == 8 ? 0.9 : 0.75;
        const int64_t decode_blocks = (rows + rows_per_block - 1) / rows_per_block;
        const double size = decode ? (threads == 64 ? 1.0 : threads == 128 ? 0.97 : 0.9)
                                   : (threads == 256 ? 1.0 : threads == 128 ? 0.97 : 0.9);
        c.score = access * size;
        c.notes.push_back(std::to_string(bytes) + "-byte accesses, " + std::to_string(lanes) + " lanes per row, " +
                          std::to_string(rows_per_block) + " rows per block" +
                          (decode ? ", " + std::to_string(decode_blocks) + " blocks for one token" : ""));
        if (vec == 2 && threads == 128) {
          c.params["fallback"] = 1;  // the narrowest accesses: the fewest alignment assumptions
          c.notes.push_back("fallback: " + std::to_string(bytes) + "-byte accesses");
        }
        out.push_back(std::move(c));
      }
    }
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& p) const override {
    std::ostringstream name;
    name << "rope_kv_" << m.variant << "_" << dtype_tag(m.dtype) << "_h";
    for (int64_t s = 0; s < m.facts.at("streams"); ++s) name << (s ? "x" : "") << m.facts.at("heads" + std::to_string(s));
    name << "_d" << m.facts.at("D");
    if (m.facts.count("rope_theta_bits")) {
      const double theta = std::bit_cast<double>(m.facts.at("rope_theta_bits"));
      if (theta == static_cast<double>(static_cast<int64_t>(theta)))
        name << "_theta" << static_cast<int64_t>(theta);
      else
        name << "_theta" << std::hex << m.facts.at("rope_theta_bits") << std::dec;
      if (m.facts.at("rope_llama3")) name << "_llama3";
    }
    name << "_v" << p.at("vec") << "_t" << p.at("threads");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& p) const override {
    const int64_t lanes = m.facts.at("D") / 2 / p.at("vec");
    Launch launch;
    launch.kernel = kernel_name(m, p);
    launch.grid_x = Extent{m.facts.at("rows"), 0, p.at("threads") / lanes};  // one row per (token, head)
    launch.block_x = static_cast<int>(p.at("threads"));
    return {launch};
  }
};

}  // namespace

const TemplateFamily& rope_kv_family() {
  static const RopeKvFamily family;
  return family;
}

}  // namespace agentcompile::plan
