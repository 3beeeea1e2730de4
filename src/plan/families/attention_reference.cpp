// Reference attention family (src/kernels/attention_reference.cuh): the conservative fallback of
// every attention region, prefill (T queries from position pos, causal, GQA) and decode (one query)
// alike, for any head dimension up to kAttentionReferenceMaxHeadDim and f32, f16 or bf16. The fast
// families (attention_prefill, attention_decode) take only some head dimensions and 16-bit dtypes;
// this one keeps every attention region runnable. One choice, marked as the fallback and ranked
// last: one block of kThreads per (query row, head), keys in tiles of the largest size whose fp32
// K and V rows fit in 48 KB of static shared memory (128 keys at D <= 32, 8 at D = 512).
// codegen/renderers/attention_reference.cpp writes the source.
#include "plan/families/attention_reference.h"

#include <bit>
#include <cmath>
#include <sstream>

#include "plan/families.h"

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

float scale_of(const ir::Node& attn) { return static_cast<float>(attn.float_attr("scale", 1.0)); }  // the interpreter's default

class AttentionReferenceFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "attention_reference"; }
  std::string template_file() const override { return "attention_reference.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    if (!attention_reference_rejection(ctx).empty()) return std::nullopt;
    const ir::Node& attn = ctx.node(0);
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
    m.roles["q"] = ctx.slot_of(attn.operands[0]);
    m.roles["k"] = ctx.slot_of(attn.operands[1]);
    m.roles["v"] = ctx.slot_of(attn.operands[2]);
    m.roles["pos"] = ctx.slot_of(attn.operands[3]);
    m.roles["o"] = ctx.slot_of(attn.result);
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
         << m.facts.at("KV") << "_d" << m.facts.at("D");
    if (m.facts.at("tokens_static") > 1) name << "_q" << m.facts.at("tokens_static");
    // The scale is a value, not a choice; spelled only when it is not the usual 1/sqrt(D).
    const auto usual = std::bit_cast<uint32_t>(static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.facts.at("D")))));
    if (m.facts.at("scale_bits") != usual) name << "_sc" << std::hex << m.facts.at("scale_bits") << std::dec;
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
    return {launch};
  }
};

}  // namespace

std::string attention_reference_rejection(const RegionContext& ctx) {
  if (ctx.region->kind != analysis::RegionKind::kAttention) return "not an attention region";
  if (ctx.size() != 1 || ctx.node(0).op != OpKind::kAttention)
    return "the region is " + std::to_string(ctx.size()) + " ops, not one attention op";
  const ir::Node& attn = ctx.node(0);
  if (attn.operands.size() != 4) return "attention takes q, k, v and pos; this one has " + std::to_string(attn.operands.size()) + " operands";
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
  for (ir::ValueId value : {attn.operands[0], attn.operands[1], attn.operands[2], attn.operands[3], attn.result})
    if (ctx.slot_of(value).empty()) return "an attention operand or result is not on the region's interface";
  return "";
}

const TemplateFamily& attention_reference_family() {
  static const AttentionReferenceFamily family;
  return family;
}

}  // namespace agentcompile::plan
