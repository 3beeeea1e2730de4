// Reading an attention region and its decode prologue (see attention_prologue.h).
#include "plan/families/attention_prologue.h"

#include <bit>
#include <set>
#include <sstream>
#include <vector>

#include "plan/families/rope_params.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

// The value under reshapes and views.
ir::ValueId under_views(const ir::Function& f, ir::ValueId value) {
  while (true) {
    const int producer = f.value(value).producer;
    if (producer < 0) return value;
    const ir::Node& n = f.nodes[static_cast<size_t>(producer)];
    if (n.op != OpKind::kReshape && n.op != OpKind::kView) return value;
    value = n.operands[0];
  }
}

// One stream walked back from the value the attention reads: [rmsnorm] -> [rope] -> [kv_append].
struct Stream {
  const ir::Node* norm = nullptr;
  const ir::Node* rope = nullptr;
  const ir::Node* append = nullptr;
  std::vector<const ir::Node*> casts;  // float casts on the way (a norm computed in f32)
  ir::ValueId source = ir::kNoValue;   // the raw input the stream starts from
};

bool is_float_cast(const ir::Function& f, const ir::Node& n) {
  return n.op == OpKind::kCast && ir::is_float(f.type(n.operands[0]).dtype) && ir::is_float(f.type(n.result).dtype);
}

class PrologueReader {
 public:
  explicit PrologueReader(const RegionContext& ctx) : ctx_(ctx) {
    for (size_t i = 0; i + 1 < ctx.size(); ++i) prologue_nodes_.insert(&ctx.node(static_cast<int>(i)));
  }

  // The node of the prologue that defines `value`, or null.
  const ir::Node* producer_in_prologue(ir::ValueId value) const {
    const int producer = ctx_.function->value(value).producer;
    if (producer < 0) return nullptr;
    const ir::Node* n = &ctx_.function->nodes[static_cast<size_t>(producer)];
    return prologue_nodes_.count(n) ? n : nullptr;
  }

  // The prologue node `value` comes from, seen through reshapes and the float casts of the prologue
  // (collected into the stream), with `value` moved to that node's result; null where the stream
  // reaches the region's interface, `value` then as the region reads it.
  const ir::Node* step_back(ir::ValueId& value, Stream& s) const {
    while (true) {
      const ir::ValueId root = under_views(*ctx_.function, value);
      const ir::Node* n = producer_in_prologue(root);
      if (!n) return nullptr;
      value = root;
      if (!is_float_cast(*ctx_.function, *n)) return n;
      s.casts.push_back(n);
      value = n->operands[0];
    }
  }

  std::optional<Stream> walk(ir::ValueId value, bool through_append, std::string* why) {
    Stream s;
    if (through_append) {
      const ir::Node* append = producer_in_prologue(under_views(*ctx_.function, value));
      if (!append || append->op != OpKind::kKvAppend)
        return fail(why, "the attention's keys or values are not the cache a kv_append of the region wrote");
      s.append = append;
      value = append->operands[0];
    }
    const ir::Node* n = step_back(value, s);
    if (n && n->op == OpKind::kRope) {
      s.rope = n;
      value = n->operands[0];
      n = step_back(value, s);  // a norm over the whole projection: through the head reshape
    }
    if (n && n->op == OpKind::kRmsNorm) {
      s.norm = n;
      value = n->operands[0];
      n = step_back(value, s);
    }
    if (n) return fail(why, "a " + std::string(ir::op_info(n->op).name) + " op in the prologue is not QK-norm, RoPE or a KV append");
    if (ctx_.slot_of(value).rfind("in", 0) != 0) return fail(why, "a prologue stream does not start from a region input");
    s.source = value;
    for (const ir::Node* member : {s.norm, s.rope, s.append})
      if (member) used_.insert(member);
    used_.insert(s.casts.begin(), s.casts.end());
    return s;
  }

  bool every_node_used() const { return used_.size() == prologue_nodes_.size(); }

 private:
  static std::nullopt_t fail(std::string* why, const std::string& reason) {
    if (why) *why = reason;
    return std::nullopt;
  }

  const RegionContext& ctx_;
  std::set<const ir::Node*> prologue_nodes_, used_;
};

}  // namespace

std::optional<AttentionRegionView> read_attention_region(const RegionContext& ctx, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<AttentionRegionView> {
    if (why) *why = reason;
    return std::nullopt;
  };
  if (ctx.region->kind != analysis::RegionKind::kAttention) return fail("not an attention region");
  AttentionRegionView view;
  view.attention = &ctx.node(static_cast<int>(ctx.size()) - 1);
  const ir::Node& attn = *view.attention;
  if (attn.op != OpKind::kAttention) return fail("the region does not end in an attention op");
  // decode_batch's per-row form (q, k, v, pos[T], base[T]) comes alone: its rope and appends are a region of their own.
  const bool per_row = attn.operands.size() == 5 && ctx.size() == 1;
  if (attn.operands.size() != 4 && !per_row)
    return fail("attention takes q, k, v and pos; this one has " + std::to_string(attn.operands.size()) + " operands");
  if (ctx.size() == 1) return view;

  PrologueReader reader(ctx);
  const auto q = reader.walk(attn.operands[0], false, why);
  if (!q) return std::nullopt;
  const auto k = reader.walk(attn.operands[1], true, why);
  if (!k) return std::nullopt;
  const auto v = reader.walk(attn.operands[2], true, why);
  if (!v) return std::nullopt;
  if (!reader.every_node_used()) return fail("the prologue computes values the attention does not read");
  if (v->norm || v->rope) return fail("the values go through QK-norm or RoPE");
  if (!q->rope != !k->rope) return fail("RoPE on only one of the query and the key");
  if (!q->norm != !k->norm) return fail("QK-norm on only one of the query and the key");
  if (q->rope && !same_rope(*q->rope, *k->rope)) return fail("the query and the key use different RoPE settings");
  if (q->norm && q->norm->float_attr("eps") != k->norm->float_attr("eps")) return fail("the query and key norms use different eps");

  AttentionPrologue p;
  p.pos = ctx.slot_of(attn.operands[3]);
  for (const ir::Node* member : {q->rope, k->rope, k->append, v->append})
    if (member && ctx.slot_of(member->operands[1]) != p.pos) return fail("the prologue reads another position than the attention");
  // Every stream starts from one token's H*D elements: [1, H, D] rows, or any shape of them where a
  // norm comes first (the projection [1, H*D] for a norm over all of it; [H, 1, D] as a graph that
  // moved its head axis first may have it). The widths: 0 for a per-head norm.
  const ir::DType dtype = ctx.function->type(attn.operands[0]).dtype;
  const auto& q_rows = ctx.function->type(attn.operands[0]).shape;  // [1, NH, D]
  if (q_rows.size() != 3 || !q_rows[2].is_static()) return fail("the attention's query is not [T, NH, D] with a static D");
  const int64_t D = q_rows[2].value;
  int64_t widths[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    const Stream& stream = i == 0 ? *q : i == 1 ? *k : *v;
    const auto& type = ctx.function->type(stream.source);
    if (type.dtype != dtype || !ir::shape_is_static(type.shape))
      return fail("a prologue input is not one token of the attention's dtype: " + type.to_string());
    const ir::ValueId head_rows = stream.rope ? stream.rope->operands[0] : stream.append ? stream.append->operands[0] : stream.source;
    const auto& rows = ctx.function->type(head_rows);  // [1, H, D]
    if (rows.shape.size() != 3 || !rows.shape[1].is_static() || rows.shape[2] != ir::Dim::of(D) || rows.dtype != dtype)
      return fail("a prologue stream's rows are not [1, H, D] of the attention's dtype: " + rows.to_string());
    const int64_t heads = rows.shape[1].value;
    if (type.shape == rows.shape) continue;
    if (!stream.norm || !ir::shape_is_static(type.shape) || ir::static_elements(type.shape) != heads * D)
      return fail("a prologue stream reshapes " + type.to_string() + " without a norm over it");
    // The norm's row: a head (D), or the whole projection (H*D, which is a head's when H = 1).
    const ir::Dim norm_row = ctx.function->type(stream.norm->operands[0]).shape.back();
    if (norm_row == ir::Dim::of(heads * D) && heads > 1) widths[i] = heads * D;
    else if (norm_row != ir::Dim::of(D)) return fail("a prologue norm is over rows of " + norm_row.to_string() + " elements, not a head or the projection");
  }
  auto state_slot = [&](const ir::Node& append) -> std::string {
    const auto& states = ctx.region->states;
    for (size_t s = 0; s < states.size(); ++s)
      if (states[s] == append.string_attr("state")) return "state" + std::to_string(s);
    return "";
  };
  p.q_in = ctx.slot_of(q->source);
  p.k_in = ctx.slot_of(k->source);
  p.v_in = ctx.slot_of(v->source);
  p.k_cache = state_slot(*k->append);
  p.v_cache = state_slot(*v->append);
  if (p.k_cache.empty() || p.v_cache.empty()) return fail("a kv_append's state is not among the region's states");
  if (q->norm) {
    p.q_norm = ctx.slot_of(q->norm->operands[1]);
    p.k_norm = ctx.slot_of(k->norm->operands[1]);
    if (p.q_norm.rfind("w", 0) != 0 || p.k_norm.rfind("w", 0) != 0) return fail("a QK-norm weight is not a region weight");
    const ir::DType q_w = ctx.function->type(q->norm->operands[1]).dtype, k_w = ctx.function->type(k->norm->operands[1]).dtype;
    if (q_w != k_w || (q_w != dtype && q_w != ir::DType::kF32))
      return fail("the QK-norm weights are " + std::string(ir::dtype_name(q_w)) + " and " + std::string(ir::dtype_name(k_w)) +
                  ": the kernels read the attention's dtype or f32");
    if ((widths[0] > 0) != (widths[1] > 0)) return fail("one QK-norm is per head and the other over the whole projection");
    p.norm_f32 = q_w != dtype;
    p.q_norm_width = widths[0];
    p.k_norm_width = widths[1];
    p.eps = q->norm->float_attr("eps");
  }
  if (q->rope) {
    std::string why_not;
    p.rope = rope_spec(*q->rope, &why_not);
    if (!p.rope) return fail(why_not);
  }
  view.prologue = p;
  return view;
}

void add_prologue_to_match(const AttentionPrologue& p, Match& m) {
  m.roles["q"] = p.q_in;
  m.roles["k_new"] = p.k_in;
  m.roles["v_new"] = p.v_in;
  m.roles["k"] = p.k_cache;
  m.roles["v"] = p.v_cache;
  if (!p.q_norm.empty()) {
    m.roles["q_norm"] = p.q_norm;
    m.roles["k_norm"] = p.k_norm;
  }
  m.facts["prologue"] = 1;
  m.facts["qk_norm"] = p.q_norm.empty() ? 0 : 1;
  m.facts["rope"] = p.rope ? 1 : 0;
  m.facts["eps_bits"] = std::bit_cast<int64_t>(p.eps);
  if (p.q_norm_width) m.facts["q_norm_width"] = p.q_norm_width;
  if (p.k_norm_width) m.facts["k_norm_width"] = p.k_norm_width;
  if (p.norm_f32) m.facts["norm_f32"] = 1;
  if (p.rope) add_rope_facts(*p.rope, m);
}

std::string prologue_name(const AttentionPrologue& p) {
  std::ostringstream name;
  if (!p.q_norm.empty()) name << (p.q_norm_width || p.k_norm_width ? "_qknormfull" : "_qknorm");
  if (p.norm_f32) name << "_wf32";
  if (p.rope) name << "_rope_" << rope_name(*p.rope);
  name << "_append";
  return name.str();
}

}  // namespace agentcompile::plan
