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
// The record is in attention_reference.h; codegen/renderers/attention_reference.cpp writes the source.
#include "plan/families/attention_reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <sstream>

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

// "decode" (one query), "rows" (decode_batch: one query per sequence, each over its own rows) or "prefill".
std::string variant_of(const AttentionReferenceMatch& m) { return m.decode ? "decode" : !m.base.empty() ? "rows" : "prefill"; }

float scale_of(const ir::Node& attn) { return static_cast<float>(attn.float_attr("scale", 1.0)); }  // the interpreter's default

class AttentionReferenceFamily final : public TypedFamily<AttentionReferenceMatch, AttentionReferenceConfig> {
 public:
  std::string name() const override { return "attention_reference"; }
  std::string template_file() const override { return "attention_reference.cuh"; }

  std::optional<AttentionReferenceMatch> match(const RegionContext& ctx) const override {
    if (!attention_reference_rejection(ctx).empty()) return std::nullopt;
    const auto view = read_attention_region(ctx, nullptr);
    const ir::Node& attn = *view->attention;
    const auto& q = ctx.function->type(attn.operands[0]);  // [T, NH, D]
    const auto& k = ctx.function->type(attn.operands[1]);  // [L, KV, D]
    AttentionReferenceMatch m;
    m.dtype = q.dtype;
    m.decode = q.shape[0].is_static() && q.shape[0].value == 1;
    m.NH = q.shape[1].value;
    m.KV = k.shape[1].value;
    m.D = q.shape[2].value;
    m.tokens_static = q.shape[0].is_static() ? q.shape[0].value : 0;  // 0: T of the call
    m.scale = scale_of(attn);
    m.window = std::max<int64_t>(0, attn.int_attr("window", 0));
    m.pos = ctx.slot_of(attn.operands[3]);
    if (attn.operands.size() == 5) m.base = ctx.slot_of(attn.operands[4]);
    m.o = ctx.slot_of(attn.result);
    if (view->prologue) {
      m.q = view->prologue->q_in;
      m.k = view->prologue->k_cache;
      m.v = view->prologue->v_cache;
      m.prologue = view->prologue;
      m.prologue_vec = prologue_vec(m.D);
    } else {
      m.q = ctx.slot_of(attn.operands[0]);
      m.k = ctx.slot_of(attn.operands[1]);
      m.v = ctx.slot_of(attn.operands[2]);
    }
    return m;
  }

  std::vector<Choice> param_space(const AttentionReferenceMatch& m, const DeviceProfile& device) const override {
    const int64_t tile = tile_for(m.D);
    if (tile == 0 || kThreads > device.max_threads_per_block) return {};
    Choice c{AttentionReferenceConfig(m, AttentionReferenceSchedule{kThreads, tile})};
    c.score = 0.01;  // below every other family's candidates: the baseline they must beat
    c.notes.push_back("reference fallback: one block per (query row, head), " + std::to_string(tile) +
                      "-key fp32 tiles in shared memory (" + std::to_string(shared_bytes(m.D, tile) / 1024) +
                      " KB), fp32 online softmax; any head_dim, f32/f16/bf16");
    std::vector<Choice> out;
    out.push_back(std::move(c));
    return out;
  }

  std::string kernel_name(const AttentionReferenceConfig& config) const override {
    const AttentionReferenceMatch& m = config.match;
    std::ostringstream name;
    name << "attention_reference_" << variant_of(m) << "_" << dtype_tag(m.dtype) << "_h" << m.NH << "x" << m.KV
         << "_d" << m.D << (m.prologue ? prologue_name(*m.prologue) : "");
    if (m.tokens_static > 1) name << "_q" << m.tokens_static;
    // The scale is a value, not a choice; spelled only when it is not the usual 1/sqrt(D).
    const auto usual = std::bit_cast<uint32_t>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.D))));
    if (std::bit_cast<uint32_t>(m.scale) != usual) name << "_sc" << std::hex << std::bit_cast<uint32_t>(m.scale) << std::dec;
    if (m.window > 0) name << "_win" << m.window;
    name << "_t" << config.schedule.threads << "_k" << config.schedule.tile;
    return name.str();
  }

  std::vector<Launch> launches(const AttentionReferenceConfig& config) const override {
    const AttentionReferenceMatch& m = config.match;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = m.tokens_static ? Extent{0, m.tokens_static, 1} : Extent{1, 0, 1};  // one block per query row
    launch.grid_y = Extent{0, m.NH, 1};                                                  // and head
    launch.block_x = static_cast<int>(config.schedule.threads);
    launch.shared_bytes = 0;  // static shared memory only
    if (!m.prologue) return {launch};
    return {rope_kv_launch(attention_reference_prologue(config), launch.kernel + "_prologue"), launch};
  }

  // The rotated query of the prologue, [1, NH, D].
  int64_t workspace_bytes_fixed(const AttentionReferenceConfig& config) const override {
    const AttentionReferenceMatch& m = config.match;
    return m.prologue ? m.NH * m.D * static_cast<int64_t>(ir::dtype_size(m.dtype)) : 0;
  }
};

}  // namespace

Match AttentionReferenceConfig::match_view() const {
  const AttentionReferenceMatch& a = match;
  Match m;
  m.dtype = a.dtype;
  m.out_dtype = a.dtype;
  m.variant = variant_of(a);
  m.facts["NH"] = a.NH;
  m.facts["KV"] = a.KV;
  m.facts["D"] = a.D;
  m.facts["tokens_static"] = a.tokens_static;
  m.facts["scale_bits"] = std::bit_cast<uint32_t>(a.scale);
  if (a.window > 0) m.facts["window"] = a.window;
  m.roles["pos"] = a.pos;
  if (!a.base.empty()) m.roles["base"] = a.base;
  m.roles["o"] = a.o;
  if (a.prologue) {
    add_prologue_to_match(*a.prologue, m);
    m.facts["prologue_vec"] = a.prologue_vec;
  } else {
    m.roles["q"] = a.q;
    m.roles["k"] = a.k;
    m.roles["v"] = a.v;
  }
  return m;
}

ParamSet AttentionReferenceConfig::params_view() const {
  return {{"fallback", 1}, {"threads", schedule.threads}, {"tile", schedule.tile}};
}

// The prologue's first launch: the rope_kv family's kernel over three streams (the query, rotated
// into the workspace; the key, rotated and appended; the value, appended), at its narrowest row layout.
RopeKvConfig attention_reference_prologue(const AttentionReferenceConfig& reference) {
  const AttentionReferenceMatch& m = reference.match;
  const AttentionPrologue& p = *m.prologue;
  RopeKvMatch r;
  r.dtype = m.dtype;
  r.D = m.D;
  const bool rope = p.rope.has_value();
  r.streams.push_back(RopeKvStream{p.q_in, p.q_norm, p.q_norm_width, "workspace", "", m.NH, rope});
  r.streams.push_back(RopeKvStream{p.k_in, p.k_norm, p.k_norm_width, "", p.k_cache, m.KV, rope});
  r.streams.push_back(RopeKvStream{p.v_in, "", 0, "", p.v_cache, m.KV, false});
  r.pos = m.pos;
  r.tokens = 1;
  r.eps = p.eps;
  r.norm_f32 = p.norm_f32;
  r.rope = p.rope;
  return RopeKvConfig(std::move(r), RopeKvSchedule{m.prologue_vec, kThreads, false});
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
  const bool per_row = attn.operands.size() == 5;
  if (pos.dtype != ir::DType::kI32 || pos.shape.size() != (per_row ? 1u : 0u))
    return (per_row ? "per-row pos must be i32[T], got " : "pos must be an i32[] scalar, got ") + pos.to_string();
  if (q.shape[0].is_static() && q.shape[0].value < 1) return "no query rows: " + q.to_string();
  const std::vector<ir::ValueId> interface = view->prologue ? std::vector<ir::ValueId>{attn.operands[3], attn.result}
                                                           : std::vector<ir::ValueId>{attn.operands[0], attn.operands[1], attn.operands[2],
                                                                                      attn.operands[3], attn.result};
  if (per_row && ctx.slot_of(attn.operands[4]).empty()) return "the per-row base is not on the region's interface";
  for (ir::ValueId value : interface)
    if (ctx.slot_of(value).empty()) return "an attention operand or result is not on the region's interface";
  return "";
}

AC_REGISTER_FAMILY(attention_reference, 120, AttentionReferenceFamily)

}  // namespace agentcompile::plan
