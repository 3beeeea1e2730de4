// RoPE + QK-norm + KV-append family (src/kernels/rope_kv.cuh): fusion regions made only of
// rmsnorm, rope and kv_append, in f32, f16 or bf16. Planning side: the region is read as up to three
// streams (input -> rmsnorm? -> rope? -> output and/or cache append), the parameter space and the
// launch geometry (one row per token and head; the grid grows with T).
// A stream's norm is either per head (QK-norm: weight [D] over each head row, Qwen3, Gemma-3) or over
// the token's whole projection before its head reshape (weight [H*D], OLMo-2), and its weight may be
// f32 while the activations are 16-bit (Gemma's 1 + w); float casts on a stream (a norm computed in
// f32 between them) change nothing the kernel computes, which is in f32 with one rounding at each
// store. The rotary embedding is parametric or a table, optionally scaled (plan/families/rope_params.h).
// The record is in rope_kv.h; codegen/renderers/rope_kv.cpp writes the source.
#include "plan/families/rope_kv.h"

#include <algorithm>
#include <bit>
#include <sstream>

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

// The value under reshapes and views (a head reshape inside the region: [T, H*D] -> [T, H, D]).
ir::ValueId under_views(const ir::Function& f, ir::ValueId value) {
  while (true) {
    const int producer = f.value(value).producer;
    if (producer < 0) return value;
    const ir::Node& n = f.nodes[static_cast<size_t>(producer)];
    if (n.op != OpKind::kReshape && n.op != OpKind::kView) return value;
    value = n.operands[0];
  }
}

bool any_row_layout(int64_t D) { return rope_row_lanes(D, 2) || rope_row_lanes(D, 4) || rope_row_lanes(D, 8); }

// "qknorm_rope_append", "rope_out", ...: what the streams do.
std::string variant_of(const RopeKvMatch& m) {
  bool norms = false, ropes = false, appends = false;
  for (const RopeKvStream& s : m.streams) {
    norms |= !s.norm.empty();
    ropes |= s.rope;
    appends |= !s.cache.empty();
  }
  return std::string(norms ? "qknorm_" : "") + (ropes ? "rope_" : "") + (appends ? "append" : "out");
}

class RopeKvFamily final : public TypedFamily<RopeKvMatch, RopeKvConfig> {
 public:
  std::string name() const override { return "rope_kv"; }
  std::string template_file() const override { return "rope_kv.cuh"; }

  std::optional<RopeKvMatch> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kFusion) return std::nullopt;
    std::vector<Stream> streams;
    ir::ValueId pos = ir::kNoValue;
    const ir::Node* rope_attrs = nullptr;
    const ir::Node* norm_attrs = nullptr;
    bool any_rope_or_append = false;
    // The stream whose latest value `v` is, directly or through a head reshape.
    auto stream_of = [&](ir::ValueId v) -> Stream* {
      const ir::ValueId root = under_views(*ctx.function, v);
      for (auto& s : streams)
        if (s.last == v || s.last == root) return &s;
      return nullptr;
    };
    auto start = [&](ir::ValueId v) -> Stream* {
      if (ctx.slot_of(v).rfind("in", 0) != 0 || static_cast<int>(streams.size()) == kMaxStreams) return nullptr;
      streams.push_back(Stream{v, v});
      return &streams.back();
    };
    // One position for the call (i32[]), or decode_batch's per-row form (ir/decode_batch.h: pos i32[T] and
    // the kv_appends' base i32[T]), the same for every op of the region.
    ir::ValueId base = ir::kNoValue;
    auto same_pos = [&](ir::ValueId p) {
      if (ctx.slot_of(p).rfind("in", 0) != 0 || ctx.function->type(p).dtype != ir::DType::kI32 || ctx.function->type(p).shape.size() > 1)
        return false;
      if (pos == ir::kNoValue) pos = p;
      return pos == p;
    };
    for (size_t i = 0; i < ctx.size(); ++i) {
      const ir::Node& n = ctx.node(static_cast<int>(i));
      Stream* s = n.operands.empty() ? nullptr : stream_of(n.operands[0]);
      const bool float_cast = n.op == OpKind::kCast && ir::is_float(ctx.function->type(n.operands[0]).dtype) &&
                              ir::is_float(ctx.function->type(n.result).dtype);
      if (float_cast) {
        if (!s && !(s = start(n.operands[0]))) return std::nullopt;
        s->last = n.result;
        continue;
      }
      if (n.op == OpKind::kRmsNorm) {
        // A norm opens a stream, after nothing but casts.
        if (s && (s->norm || s->rope || s->append)) return std::nullopt;
        if (!s && !(s = start(n.operands[0]))) return std::nullopt;
        if (norm_attrs && norm_attrs->float_attr("eps") != n.float_attr("eps")) return std::nullopt;
        norm_attrs = &n;
        s->norm = &n;
      } else if (n.op == OpKind::kRope) {
        if (s && (s->rope || s->append)) return std::nullopt;
        if (!s && !(s = start(n.operands[0]))) return std::nullopt;
        if (!same_pos(n.operands[1])) return std::nullopt;
        if (rope_attrs && !same_rope(*rope_attrs, n)) return std::nullopt;
        rope_attrs = &n;
        s->rope = &n;
      } else if (n.op == OpKind::kKvAppend) {
        if (s && s->append) return std::nullopt;
        if (!s && !(s = start(n.operands[0]))) return std::nullopt;
        if (!same_pos(n.operands[1])) return std::nullopt;
        if (n.operands.size() == 3) {
          if (ctx.slot_of(n.operands[2]).rfind("in", 0) != 0 || (base != ir::kNoValue && base != n.operands[2])) return std::nullopt;
          base = n.operands[2];
        }
        s->append = &n;
      } else {
        return std::nullopt;
      }
      any_rope_or_append |= n.op != OpKind::kRmsNorm;
      if (n.op != OpKind::kKvAppend) s->last = n.result;
    }
    if (!any_rope_or_append || streams.empty()) return std::nullopt;  // a plain norm region is not ours

    // A stream's head rows [T, H, D]: what its rope or append reads, else its input.
    auto head_rows = [&](const Stream& s) -> ir::ValueId {
      return s.rope ? s.rope->operands[0] : s.append ? s.append->operands[0] : s.source;
    };
    RopeKvMatch m;
    const auto& first_type = ctx.function->type(head_rows(streams.front()));
    if (first_type.shape.size() != 3 || !first_type.shape[2].is_static()) return std::nullopt;
    const int64_t D = first_type.shape[2].value;
    m.dtype = first_type.dtype;
    if (m.dtype != ir::DType::kF16 && m.dtype != ir::DType::kBF16 && m.dtype != ir::DType::kF32) return std::nullopt;
    if (!any_row_layout(D)) return std::nullopt;
    std::optional<ir::DType> norm_dtype;
    for (const Stream& s : streams) {
      RopeKvStream& out = m.streams.emplace_back();
      const auto& type = ctx.function->type(head_rows(s));
      if (type.shape.size() != 3 || type.shape[0] != first_type.shape[0] || type.shape[2] != first_type.shape[2] ||
          !type.shape[1].is_static() || type.dtype != m.dtype)
        return std::nullopt;
      const int64_t heads = type.shape[1].value;
      out.heads = heads;
      out.x = ctx.slot_of(s.source);
      const auto& source_type = ctx.function->type(s.source);
      if (source_type.dtype != m.dtype) return std::nullopt;
      if (s.norm) {
        const std::string w = ctx.slot_of(s.norm->operands[1]);
        const auto& w_type = ctx.function->type(s.norm->operands[1]);
        if (w.rfind("w", 0) != 0 || (w_type.dtype != m.dtype && w_type.dtype != ir::DType::kF32)) return std::nullopt;
        if (norm_dtype && *norm_dtype != w_type.dtype) return std::nullopt;  // one weight type per kernel
        norm_dtype = w_type.dtype;
        // Per head ([T, H, D] rows, weight [D]) or over the whole projection ([T, H*D], weight [H*D]),
        // which the rope or append then reads through a head reshape; for one head, the same rows.
        const ir::Shape projection{first_type.shape[0], ir::Dim::of(heads * D)};
        const auto& norm_rows = ctx.function->type(s.norm->operands[0]).shape;
        if (source_type.shape != type.shape && source_type.shape != projection) return std::nullopt;
        const bool per_head = norm_rows == type.shape || (heads == 1 && norm_rows == projection);
        const bool whole = !per_head && norm_rows == projection;
        if (!per_head && !whole) return std::nullopt;
        if (whole) out.norm_width = heads * D;
        out.norm = w;
      } else if (type.shape != source_type.shape) {
        return std::nullopt;  // a reshape inside the region that no norm explains
      }
      out.rope = s.rope != nullptr;
      out.y = s.last != s.source ? ctx.slot_of(s.last) : "";
      if (!out.y.empty() && (out.y.rfind("out", 0) != 0 || ctx.function->type(s.last).dtype != m.dtype)) return std::nullopt;
      if (s.append) {
        const auto& states = ctx.region->states;
        auto it = std::find(states.begin(), states.end(), s.append->string_attr("state"));
        if (it == states.end()) return std::nullopt;
        const auto& cache = ctx.function->type(s.append->result);  // [L, H, D]
        if (cache.dtype != m.dtype || cache.shape.size() != 3 || cache.shape[1] != type.shape[1] || cache.shape[2] != type.shape[2])
          return std::nullopt;
        out.cache = "state" + std::to_string(it - states.begin());
      }
      if (out.y.empty() && !s.append) return std::nullopt;  // computed but never leaves: not a region we understand
    }
    // What leaves the region is a stream's last value or a cache: no intermediate escapes.
    for (size_t i = 0; i < ctx.size(); ++i) {
      const ir::Node& n = ctx.node(static_cast<int>(i));
      const bool last = std::any_of(streams.begin(), streams.end(), [&](const Stream& s) { return s.last == n.result; });
      if (n.op != OpKind::kKvAppend && !last && !ctx.slot_of(n.result).empty()) return std::nullopt;
    }
    m.pos = ctx.slot_of(pos);
    const bool per_row = ctx.function->type(pos).shape.size() == 1;
    if (per_row != (base != ir::kNoValue) && std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return s.append; }))
      return std::nullopt;  // per-row positions need each append's row base, and only they have one
    if (per_row) {
      if (ctx.function->type(pos).shape[0] != first_type.shape[0]) return std::nullopt;
      if (base != ir::kNoValue) m.base = ctx.slot_of(base);
      else m.base = "";
      m.per_row = true;
    }
    m.D = D;
    if (first_type.shape[0].is_static()) m.tokens = first_type.shape[0].value;
    if (norm_attrs) m.eps = norm_attrs->float_attr("eps");
    m.norm_f32 = norm_dtype && *norm_dtype != m.dtype;
    if (rope_attrs && !(m.rope = rope_spec(*rope_attrs, nullptr))) return std::nullopt;
    return m;
  }

  std::vector<Choice> param_space(const RopeKvMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t D = m.D, rows = m.rows();
    const bool decode = m.tokens == 1;
    for (int vec : {2, 4, 8}) {
      const int64_t lanes = rope_row_lanes(D, vec);
      if (lanes == 0) continue;
      for (int threads : {64, 128, 256}) {
        if (threads > device.max_threads_per_block) continue;
        const int64_t rows_per_block = threads / lanes;
        Choice c{RopeKvConfig(m, RopeKvSchedule{vec, threads, false})};
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
          c.config.schedule.fallback = true;  // the narrowest accesses: the fewest alignment assumptions
          c.notes.push_back("fallback: " + std::to_string(bytes) + "-byte accesses");
        }
        out.push_back(std::move(c));
      }
    }
    return out;
  }

  std::string kernel_name(const RopeKvConfig& config) const override {
    const RopeKvMatch& m = config.match;
    std::ostringstream name;
    name << "rope_kv_" << variant_of(m) << "_" << dtype_tag(m.dtype) << "_h";
    for (size_t s = 0; s < m.streams.size(); ++s) name << (s ? "x" : "") << m.streams[s].heads;
    name << "_d" << m.D;
    if (m.rope) name << "_" << rope_name(*m.rope);
    // The norm's form where it is not the per-head one of the activation dtype.
    for (size_t s = 0; s < m.streams.size(); ++s)
      if (m.streams[s].norm_width) name << "_full" << s;
    if (m.norm_f32) name << "_wf32";
    if (m.per_row) name << "_rows";
    name << "_v" << config.schedule.vec << "_t" << config.schedule.threads;
    return name.str();
  }

  std::vector<Launch> launches(const RopeKvConfig& config) const override { return {rope_kv_launch(config, kernel_name(config))}; }
};

}  // namespace

int64_t RopeKvMatch::rows() const {
  int64_t rows = 0;
  for (const RopeKvStream& s : streams) rows += s.heads;
  return rows;
}

Match RopeKvConfig::match_view() const {
  const RopeKvMatch& r = match;
  Match m;
  m.variant = variant_of(r);
  m.dtype = r.dtype;
  m.out_dtype = r.dtype;
  for (size_t i = 0; i < r.streams.size(); ++i) {
    const RopeKvStream& s = r.streams[i];
    const std::string k = std::to_string(i);
    m.facts["heads" + k] = s.heads;
    m.facts["rope" + k] = s.rope;
    if (s.norm_width) m.facts["norm_width" + k] = s.norm_width;
    m.roles["x" + k] = s.x;
    if (!s.norm.empty()) m.roles["norm" + k] = s.norm;
    if (!s.y.empty()) m.roles["y" + k] = s.y;
    if (!s.cache.empty()) m.roles["cache" + k] = s.cache;
  }
  m.roles["pos"] = r.pos;
  if (r.per_row) {
    m.facts["per_row"] = 1;
    if (!r.base.empty()) m.roles["base"] = r.base;
  }
  m.facts["streams"] = static_cast<int64_t>(r.streams.size());
  m.facts["rows"] = r.rows();
  m.facts["D"] = r.D;
  if (r.tokens) m.facts["tokens"] = *r.tokens;
  if (r.eps) m.facts["eps_bits"] = std::bit_cast<int64_t>(*r.eps);
  if (r.norm_f32) m.facts["norm_f32"] = 1;
  if (r.rope) add_rope_facts(*r.rope, m);
  return m;
}

ParamSet RopeKvConfig::params_view() const {
  ParamSet p{{"vec", schedule.vec}, {"threads", schedule.threads}};
  if (schedule.fallback) p["fallback"] = 1;
  return p;
}

Launch rope_kv_launch(const RopeKvConfig& config, const std::string& kernel) {
  const int64_t lanes = rope_row_lanes(config.match.D, config.schedule.vec);
  Launch launch;
  launch.kernel = kernel;
  launch.grid_x = Extent{config.match.rows(), 0, config.schedule.threads / lanes};  // one row per (token, head)
  launch.block_x = static_cast<int>(config.schedule.threads);
  return launch;
}

AC_REGISTER_FAMILY(rope_kv, 70, RopeKvFamily)

}  // namespace agentcompile::plan
