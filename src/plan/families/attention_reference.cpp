// Reference attention family (src/kernels/attention_reference.cuh): the conservative fallback of
// every attention region, prefill (T queries from position pos, causal, GQA) and decode (one query)
// alike, with or without a sliding window, for any head dimension up to kAttentionReferenceMaxHeadDim
// and f32, f16 or bf16. The fast
// families (attention_prefill, attention_decode) take only some head dimensions and 16-bit dtypes;
// this one keeps every attention region runnable. One choice, marked as the fallback and ranked
// last: one block of kThreads per (query row, head), keys in tiles of the largest size whose fp32
// K and V rows fit in 48 KB of static shared memory (128 keys at D <= 32, 8 at D = 512).
// A decode region that opens with the token's QK-norm / RoPE / KV append is two launches: the
// rope_kv kernel (query rotated into the workspace, key and value appended), then this kernel.
// codegen/renderers/attention_reference.cpp writes the source.
#include "plan/families/attention_reference.h"

#include <bit>
#include <cmath>
#include <sstream>

#include "plan/families.h"
#include "plan/families/attention_prologue.h"
#include "plan/families/rope_params.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

constexpr int64_t kThreads = 128;
constexpr int64_t kStaticSharedLimit = 48 * 1024;

// Static shared memory of the kernel: the query row, K and V tiles with rows padded to D+1, the
// tile's probabilities and the block-reduction scratch, all fp32.
int64_t shared_bytes(int64_t D, int64_t tile) { return (D + 2 * tile * (D + 1) + tile + kThreads / 32) * 4; }

// The largest tile (keys per pass) that fits; 0 when not even 8 keys do.
int64_t tile_for(int64_t D) {
  for (int64_t tile : {128, 64, 32, 16, 8})
    if (tile <= kThreads && shared_bytes(D, tile) <= kStaticSharedLimit) return tile;
  return 0;
}

bool float_dtype(ir::DType dtype) { return dtype == ir::DType::kF32 || dtype == ir::DType::kF16 || dtype == ir::DType::kBF16; }

// The narrowest rope_kv row layout for head dimension D (2, 4 or 8 elements per lane; the row's
// lanes must fit a warp); 0 when none does.
int64_t prologue_vec(int64_t D) {
  for (int64_t vec : {2, 4, 8})
    if (rope_row_lanes(D, vec) > 0) return vec;
  return 0;
}

float scale_of(const ir::Node& attn) { return static_cast<float>(attn.float_attr("scale", 1.0)); }  // the interpreter's default

// The prologue's first launch: the rope_kv family's kernel over three streams (the query, rotated
// into the workspace; the key, rotated and appended; the value, appended), at its narrowest row layout.
Match prologue_rope_match(const Match& m) {
  Match r;
  r.dtype = m.dtype;
  r.out_dtype = m.dtype;
  const int64_t NH = m.facts.at("NH"), KV = m.facts.at("KV");
  const bool norm = m.facts.at("qk_norm") != 0, rope = m.facts.at("rope") != 0;
  r.variant = std::string(norm ? "qknorm_" : "") + (rope ? "rope_" : "") + "append";
  r.roles = {{"x0", m.roles.at("q")}, {"y0", "workspace"}, {"x1", m.roles.at("k_new")}, {"cache1", m.roles.at("k")},
             {"x2", m.roles.at("v_new")}, {"cache2", m.roles.at("v")}, {"pos", m.roles.at("pos")}};
  if (norm) {
    r.roles["norm0"] = m.roles.at("q_norm");
    r.roles["norm1"] = m.roles.at("k_norm");
  }
  for (const auto& [fact, value] : m.facts)
    if (fact.rfind("rope_", 0) == 0 || fact == "eps_bits" || fact == "norm_f32") r.facts[fact] = value;
  if (m.facts.count("q_norm_width")) r.facts["norm_width0"] = m.facts.at("q_norm_width");
  if (m.facts.count("k_norm_width")) r.facts["norm_width1"] = m.facts.at("k_norm_width");
  r.facts["heads0"] = NH;
  r.facts["heads1"] = KV;
  r.facts["heads2"] = KV;
  r.facts["rope0"] = rope;
  r.facts["rope1"] = rope;
  r.facts["rope2"] = 0;
  r.facts["streams"] = 3;
  r.facts["rows"] = NH + 2 * KV;
  r.facts["D"] = m.facts.at("D");
  r.facts["tokens"] = 1;
  return r;
}

Launch prologue_launch(const Match& m, const std::string& name) {
  const Match r = prologue_rope_match(m);
  const ParamSet params{{"vec", m.facts.at("prologue_vec")}, {"threads", kThreads}};
  Launch launch = rope_kv_family().launches(r, params).front();
  launch.kernel = name;
  return launch;
}

class AttentionReferenceFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "attention_reference"; }
  std::string template_file() const override { return "attention_reference.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    if (!attention_reference_rejection(ctx).empty()) return std::nullopt;
    const auto view = read_attention_region(ctx, nullptr);
    const ir::Node& attn = *view->attention;
    const auto& q = ctx.function->type(attn.operands[0]);  // [T, NH, D]
    const auto& k = ctx.function->type(attn.operands[1]);  // [L, KV, D]
    Match m;
    m.dtype = q.dtype;
    m.out_dtype = q.dtype;
    const bool one_token = q.shape[0].is_static() && q.shape[0].value == 1;
    m.variant = one_token ? "decode" : "prefill";
    m.facts["NH"] = q.shape[1].value;
    m.facts["KV"] = k.shape[1].value;
    m.facts["D"] = q.shape[2].value;
    m.facts["tokens_static"] = q.shape[0].is_static() ? q.shape[0].value : 0;  // 0: T of the call
    m.facts["scale_bits"] = std::bit_cast<uint32_t>(scale_of(attn));
    if (attn.int_attr("window", 0) > 0) m.facts["window"] = attn.int_attr("window", 0);
    m.roles["pos"] = ctx.slot_of(attn.operands[3]);
    m.roles["o"] = ctx.slot_of(attn.result);
    if (view->prologue) {
      add_prologue_to_match(*view->prologue, m);
      m.facts["prologue_vec"] = prologue_vec(m.facts.at("D"));
    } else {
      m.roles["q"] = ctx.slot_of(attn.operands[0]);
      m.roles["k"] = ctx.slot_of(attn.operands[1]);
      m.roles["v"] = ctx.slot_of(attn.operands[2]);
    }
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    const int64_t D = m.facts.at("D");
    const int64_t tile = tile_for(D);
    if (tile == 0 || kThreads > device.max_threads_per_block) return {};
    Choice c;
    c.params = {{"fallback", 1}, {"threads", kThreads}, {"tile", tile}};
    c.score = 0.01;  // below every other family's candidates: the baseline they must beat
    c.notes.push_back("reference fallback: one block per (query row, head), " + std::to_string(tile) +
                      "-key fp32 tiles in shared memory (" + std::to_string(shared_bytes(D, tile) / 1024) +
                      " KB), fp32 online softmax; any head_dim, f32/f16/bf16");
    return {c};
  }

  std::string kernel_name(const Match& m, const ParamSet& p) const override {
    std::ostringstream name;
    name << "attention_reference_" << m.variant << "_" << dtype_tag(m.dtype) << "_h" << m.facts.at("NH") << "x"
         << m.facts.at("KV") << "_d" << m.facts.at("D") << prologue_name(m);
    if (m.facts.at("tokens_static") > 1) name << "_q" << m.facts.at("tokens_static");
    // The scale is a value, not a choice; spelled only when it is not the usual 1/sqrt(D).
    const auto usual = std::bit_cast<uint32_t>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.facts.at("D")))));
    if (m.facts.at("scale_bits") != usual) name << "_sc" << std::hex << m.facts.at("scale_bits") << std::dec;
    if (m.facts.count("window")) name << "_win" << m.facts.at("window");
    name << "_t" << p.at("threads") << "_k" << p.at("tile");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& p) const override {
    Launch launch;
    launch.kernel = kernel_name(m, p);
    const int64_t tokens = m.facts.at("tokens_static");
    launch.grid_x = tokens ? Extent{0, tokens, 1} : Extent{1, 0, 1};  // one block per query row
    launch.grid_y = Extent{0, m.facts.at("NH"), 1};                   // and head
    launch.block_x = static_cast<int>(p.at("threads"));
    launch.shared_bytes = 0;  // static shared memory only
    if (!m.facts.count("prologue")) return {launch};
    Launch rope = prologue_launch(m, launch.kernel + "_prologue");
    return {rope, launch};
  }

  // The rotated query of the prologue, [1, NH, D].
  int64_t workspace_bytes_fixed(const Match& m, const ParamSet&) const override {
    return m.facts.count("prologue") ? m.facts.at("NH") * m.facts.at("D") * static_cast<int64_t>(ir::dtype_size(m.dtype)) : 0;
  }
};

}  // namespace

Candidate attention_reference_prologue(const Candidate& reference) {
  Candidate rope;
  rope.id = reference.id;
  rope.family = "rope_kv";
  rope.template_file = rope_kv_family().template_file();
  rope.match = prologue_rope_match(reference.match);
  rope.params = {{"vec", reference.match.facts.at("prologue_vec")}, {"threads", kThreads}};
  rope.launches = {reference.launches.front()};
  rope.spelled_name = rope.launches.front().kernel;
  return rope;
}

std::string attention_reference_rejection(const RegionContext& ctx) {
  std::string why;
  const auto view = read_attention_region(ctx, &why);
  if (!view) return why;
  const ir::Node& attn = *view->attention;
  if (view->prologue) {
    const auto& q = ctx.function->type(attn.operands[0]);
    if (q.shape.size() != 3 || !q.shape[2].is_static() || prologue_vec(q.shape[2].value) == 0)
      return "the prologue's head rows (" + q.to_string() + ") do not tile a warp in the rope_kv kernel";
  }
  const auto& q = ctx.function->type(attn.operands[0]);
  const auto& k = ctx.function->type(attn.operands[1]);
  const auto& v = ctx.function->type(attn.operands[2]);
  const auto& pos = ctx.function->type(attn.operands[3]);
  const auto& o = ctx.function->type(attn.result);
  if (q.shape.size() != 3 || k.shape.size() != 3 || k != v)
    return "expects q[T, NH, D] and k, v [L, KV, D] of one type, got " + q.to_string() + ", " + k.to_string() + ", " + v.to_string();
  if (!q.shape[1].is_static() || !q.shape[2].is_static() || !k.shape[1].is_static() || !k.shape[2].is_static())
    return "heads and head_dim must be static, got " + q.to_string() + " and " + k.to_string();
  const int64_t NH = q.shape[1].value, D = q.shape[2].value, KV = k.shape[1].value;
  if (k.shape[2].value != D) return "head dims of q and k differ: " + q.to_string() + " vs " + k.to_string();
  if (KV <= 0 || NH % KV != 0) return "query heads " + std::to_string(NH) + " are not a multiple of kv heads " + std::to_string(KV);
  if (D < 1 || D > kAttentionReferenceMaxHeadDim)
    return "head_dim " + std::to_string(D) + " is outside 1.." + std::to_string(kAttentionReferenceMaxHeadDim) +
           ", the head dimensions the reference kernel is built and tested for";
  if (!float_dtype(q.dtype))
    return std::string(ir::dtype_name(q.dtype)) + " attention: the reference kernel takes f32, f16 and bf16 only";
  if (k.dtype != q.dtype || o.dtype != q.dtype)
    return "mixed dtypes (q " + std::string(ir::dtype_name(q.dtype)) + ", k/v " + std::string(ir::dtype_name(k.dtype)) + ", out " +
           std::string(ir::dtype_name(o.dtype)) + "): the reference kernel reads and writes one dtype";
  if (pos.dtype != ir::DType::kI32 || !pos.shape.empty()) return "pos must be an i32[] scalar, got " + pos.to_string();
  if (q.shape[0].is_static() && q.shape[0].value < 1) return "no query rows: " + q.to_string();
  const std::vector<ir::ValueId> interface = view->prologue ? std::vector<ir::ValueId>{attn.operands[3], attn.result}
                                                           : std::vector<ir::ValueId>{attn.operands[0], attn.operands[1], attn.operands[2],
                                                                                      attn.operands[3], attn.result};
  for (ir::ValueId value : interface)
    if (ctx.slot_of(value).empty()) return "an attention operand or result is not on the region's interface";
  return "";
}

const TemplateFamily& attention_reference_family() {
  static const AttentionReferenceFamily family;
  return family;
}

}  // namespace agentcompile::plan
