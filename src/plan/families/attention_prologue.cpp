// Reading an attention region and its decode prologue (see attention_prologue.h).
#include "plan/families/attention_prologue.h"

#include <bit>
#include <set>
#include <sstream>

namespace agentcompile::plan {

namespace {

using ir::OpKind;

bool same_rope_attrs(const ir::Node& a, const ir::Node& b) {
  for (const char* key : {"theta", "factor", "low_freq_factor", "high_freq_factor", "original_max_position"})
    if (a.float_attr(key, -1) != b.float_attr(key, -1)) return false;
  return a.string_attr("scaling", "none") == b.string_attr("scaling", "none");
}

// One stream walked back from the value the attention reads: [rmsnorm] -> [rope] -> [kv_append].
struct Stream {
  const ir::Node* norm = nullptr;
  const ir::Node* rope = nullptr;
  const ir::Node* append = nullptr;
  ir::ValueId source = ir::kNoValue;  // the raw input the stream starts from
};

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

  std::optional<Stream> walk(ir::ValueId value, bool through_append, std::string* why) {
    Stream s;
    const ir::Node* n = producer_in_prologue(value);
    if (through_append) {
      if (!n || n->op != OpKind::kKvAppend) return fail(why, "the attention's keys or values are not the cache a kv_append of the region wrote");
      s.append = n;
      value = n->operands[0];
      n = producer_in_prologue(value);
    }
    if (n && n->op == OpKind::kRope) {
      s.rope = n;
      value = n->operands[0];
      n = producer_in_prologue(value);
    }
    if (n && n->op == OpKind::kRmsNorm) {
      s.norm = n;
      value = n->operands[0];
      n = producer_in_prologue(value);
    }
    if (n) return fail(why, "a " + std::string(ir::op_info(n->op).name) + " op in the prologue is not QK-norm, RoPE or a KV append");
    if (ctx_.slot_of(value).rfind("in", 0) != 0) return fail(why, "a prologue stream does not start from a region input");
    s.source = value;
    for (const ir::Node* member : {s.norm, s.rope, s.append})
      if (member) used_.insert(member);
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
  if (attn.operands.size() != 4) return fail("attention takes q, k, v and pos; this one has " + std::to_string(attn.operands.size()) + " operands");
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
  if (q->rope && !same_rope_attrs(*q->rope, *k->rope)) return fail("the query and the key use different RoPE settings");
  if (q->norm && q->norm->float_attr("eps") != k->norm->float_attr("eps")) return fail("the query and key norms use different eps");

  AttentionPrologue p;
  p.pos = ctx.slot_of(attn.operands[3]);
  for (const ir::Node* member : {q->rope, k->rope, k->append, v->append})
    if (member && ctx.slot_of(member->operands[1]) != p.pos) return fail("the prologue reads another position than the attention");
  for (const auto* stream : {&*q, &*k, &*v}) {
    const auto& type = ctx.function->type(stream->source);
    if (type.dtype != ctx.function->type(attn.operands[0]).dtype || type.shape.size() != 3 || !type.shape[0].is_static() ||
        type.shape[0].value != 1)
      return fail("a prologue input is not one token of the attention's dtype: " + type.to_string());
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
    p.eps = q->norm->float_attr("eps");
  }
  if (q->rope) {
    const std::string scaling = q->rope->string_attr("scaling", "none");
    if (scaling != "none" && scaling != "llama3") return fail("RoPE scaling " + scaling + " is not implemented");
    p.rope = q->rope;
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
  if (p.rope) {
    const ir::Node& r = *p.rope;
    m.facts["rope_theta_bits"] = std::bit_cast<int64_t>(r.float_attr("theta", 10000.0));
    m.facts["rope_llama3"] = r.string_attr("scaling", "none") == "llama3";
    m.facts["rope_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("factor", 1.0));
    m.facts["rope_low_freq_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("low_freq_factor", 1.0));
    m.facts["rope_high_freq_factor_bits"] = std::bit_cast<int64_t>(r.float_attr("high_freq_factor", 4.0));
    m.facts["rope_original_max_position_bits"] = std::bit_cast<int64_t>(r.float_attr("original_max_position", 8192.0));
  }
}

std::string prologue_name(const Match& m) {
  if (!m.facts.count("prologue")) return "";
  std::ostringstream name;
  if (m.facts.at("qk_norm")) name << "_qknorm";
  if (m.facts.at("rope")) {
    const double theta = std::bit_cast<double>(m.facts.at("rope_theta_bits"));
    name << "_rope_theta";
    if (theta == static_cast<double>(static_cast<int64_t>(theta)))
      name << static_cast<int64_t>(theta);
    else
      name << std::hex << m.facts.at("rope_theta_bits") << std::dec;
    if (m.facts.at("rope_llama3")) name << "_llama3";
  }
  name << "_append";
  return name.str();
}

}  // namespace agentcompile::plan
