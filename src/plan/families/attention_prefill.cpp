// Prefill attention family (src/kernels/attention_prefill.cuh): the attention regions of a prefill
// (T queries, causal from position pos, GQA, optionally a sliding window) in f16/bf16. Planning side:
// the match, the FlashAttention-2 tile space (BLOCK_M rows per block, 16 or 32 per warp; BLOCK_N keys
// per tile; a STAGES-deep cp.async ring) filtered by shared memory and registers, for D = 64, 96 and
// 128, and the SIMT fallback, for every D that is a multiple of 32 up to 256. At D = 256 the mma
// kernel's Q fragments and O accumulators alone (3D/4 = 192 registers per thread) leave no room under
// the register budget, so Gemma-3's prefill attention runs on the SIMT kernel (one warp per query
// row; with its 512-key window a query reads at most 512 keys) or the reference family.
// The record is in attention_prefill.h; codegen/renderers/attention_prefill.cpp writes the source.
#include "plan/families/attention_prefill.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>


namespace agentcompile::plan {

namespace {

using ir::OpKind;

constexpr int kFallbackWarps = 4;

// Head dims of the mma kernel and of the SIMT kernel.
bool mma_head_dim(int64_t D) { return D == 64 || D == 96 || D == 128; }
bool simt_head_dim(int64_t D) { return D % 32 == 0 && D > 0 && D <= 256; }

// The shared-memory pitch of a row (smem_pitch in the kernel): D = 96 rows are padded to 128.
int64_t smem_pitch(int64_t D) { return D % 64 == 0 ? D : D <= 128 ? 128 : 256; }

// Dynamic shared memory of the mma kernel: the Q tile and a K and a V ring of STAGES tiles.
int64_t mma_shared_bytes(int64_t D, int64_t block_m, int64_t block_n, int64_t stages) {
  return (block_m + 2 * stages * block_n) * smem_pitch(D) * 2;
}

// Registers per thread the mma kernel holds live, per m16 tile of the warp: Q fragments (D/4),
// O accumulators (D/2) and the score tile (BLOCK_N/2); then the hoisted ldmatrix addresses (D/8)
// and ~40 for the rest. Calibrated on ptxas 13.0 (sm_90a): above kRegisterBudget the kernel spills.
int64_t mma_registers(int64_t D, int64_t block_n, int64_t m_tiles) { return m_tiles * (3 * D / 4 + block_n / 2) + D / 8 + 40; }
constexpr int64_t kRegisterBudget = 208;

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

class AttentionPrefillFamily final : public TypedFamily<AttentionPrefillMatch, AttentionPrefillConfig> {
 public:
  std::string name() const override { return "attention_prefill"; }
  std::string template_file() const override { return "attention_prefill.cuh"; }

  std::optional<AttentionPrefillMatch> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kAttention || ctx.size() != 1) return std::nullopt;
    const ir::Node& attn = ctx.node(0);
    if (attn.op != OpKind::kAttention || attn.operands.size() != 4) return std::nullopt;
    const auto& q = ctx.function->type(attn.operands[0]);  // [T, NH, D]
    const auto& k = ctx.function->type(attn.operands[1]);  // [L, KV, D]
    const auto& v = ctx.function->type(attn.operands[2]);  // [L, KV, D]
    const auto& pos = ctx.function->type(attn.operands[3]);
    if (q.shape.size() != 3 || k.shape.size() != 3 || k != v) return std::nullopt;
    if (q.shape[0].is_static() && q.shape[0].value == 1) return std::nullopt;  // one query: decode attention
    if (!q.shape[1].is_static() || !q.shape[2].is_static() || !k.shape[1].is_static() || !k.shape[2].is_static()) return std::nullopt;
    if (pos.dtype != ir::DType::kI32 || !pos.shape.empty()) return std::nullopt;
    const int64_t NH = q.shape[1].value, D = q.shape[2].value, KV = k.shape[1].value;
    if (!simt_head_dim(D)) return std::nullopt;
    if (k.shape[2].value != D || KV <= 0 || NH % KV != 0) return std::nullopt;
    if (q.dtype != k.dtype || (q.dtype != ir::DType::kF16 && q.dtype != ir::DType::kBF16)) return std::nullopt;
    if (ctx.function->type(attn.result).dtype != q.dtype) return std::nullopt;

    AttentionPrefillMatch m;
    m.dtype = q.dtype;
    m.NH = NH;
    m.KV = KV;
    m.D = D;
    m.scale = static_cast<float>(attn.float_attr("scale", 1.0));
    m.window = std::max<int64_t>(0, attn.int_attr("window", 0));
    m.q = ctx.slot_of(attn.operands[0]);
    m.k = ctx.slot_of(attn.operands[1]);
    m.v = ctx.slot_of(attn.operands[2]);
    m.pos = ctx.slot_of(attn.operands[3]);
    m.o = ctx.slot_of(attn.result);
    for (const std::string* slot : {&m.q, &m.k, &m.v, &m.pos, &m.o})
      if (slot->empty()) return std::nullopt;
    return m;
  }

  std::vector<Choice> param_space(const AttentionPrefillMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t D = m.D;
    if (device.sm() >= 80 && mma_head_dim(D)) {  // cp.async, ldmatrix and bf16 mma.sync
      for (int block_m : {64, 128}) {
        for (int warps : {4, 8}) {
          const int64_t warp_rows = block_m / warps;  // 16 or 32: one or two m16 tiles per warp
          if (warp_rows != 16 && warp_rows != 32) continue;
          for (int block_n : {32, 64, 128}) {
            for (int stages : {2, 3}) {
              const int64_t threads = warps * 32;
              const int64_t shared = mma_shared_bytes(D, block_m, block_n, stages);
              const int64_t registers = mma_registers(D, block_n, warp_rows / 16);
              if (shared > device.shared_per_block_optin || registers > std::min<int64_t>(kRegisterBudget, device.max_registers_per_thread))
                continue;
              // Blocks resident per SM: shared memory (+1 KB the runtime reserves per block), registers
              // (allocated in units of 8 per thread) and threads.
              const int64_t by_shared = device.shared_per_sm / (shared + 1024);
              const int64_t by_registers = device.registers_per_sm / (threads * ((registers + 7) / 8 * 8));
              const int64_t by_threads = device.max_threads_per_sm / threads;
              const int64_t blocks = std::min({by_shared, by_registers, by_threads});
              if (blocks < 1) continue;
              const int64_t resident_warps = blocks * warps;
              // Heuristic (from H200 measurements at T=2048 and 20480): 8+ resident warps hide the
              // mma and ldmatrix latencies; 64-row blocks of 16-row warps balance the causal work
              // best; two m16 tiles per warp halve the K/V fragment reads; 64-key tiles balance
              // barriers against score registers; a third stage rarely pays.
              const double latency = std::min(1.0, static_cast<double>(resident_warps) / 8.0);
              const double rows = block_m == 64 ? 1.0 : warp_rows == 32 ? 0.99 : 0.96;
              const double tile = block_n == 64 ? 1.0 : block_n == 32 ? 0.97 : 0.95;
              const double depth = stages == 2 ? 1.0 : 0.98;
              Choice c{AttentionPrefillConfig(m, AttentionPrefillSchedule{false, block_m, block_n, warps, stages})};
              c.score = latency * rows * tile * depth;
              c.notes.push_back(std::to_string(shared / 1024) + " KB shared, ~" + std::to_string(registers) + " registers, " +
                                std::to_string(warp_rows) + " rows per warp, " + std::to_string(blocks) + " blocks (" +
                                std::to_string(resident_warps) + " warps) per SM");
              out.push_back(std::move(c));
            }
          }
        }
      }
    }
    Choice fallback{AttentionPrefillConfig(m, AttentionPrefillSchedule{true, 0, 0, kFallbackWarps, 0})};
    fallback.score = 0.05;
    fallback.notes.push_back("SIMT reference: one warp per query row, keys one at a time");
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const AttentionPrefillConfig& config) const override {
    const AttentionPrefillMatch& m = config.match;
    const AttentionPrefillSchedule& p = config.schedule;
    std::ostringstream name;
    name << "attention_prefill_" << (p.simt ? "simt" : "mma") << "_" << dtype_tag(m.dtype) << "_h" << m.NH << "_kv" << m.KV << "_d" << m.D;
    // The scale is a value, not a tile choice; spelled only when it is not the usual 1/sqrt(D).
    const auto usual = float_bits(static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.D))));
    if (float_bits(m.scale) != usual) name << "_sc" << std::hex << float_bits(m.scale) << std::dec;
    if (m.window > 0) name << "_win" << m.window;
    if (p.simt)
      name << "_w" << p.warps;
    else
      name << "_m" << p.block_m << "_n" << p.block_n << "_w" << p.warps << "_s" << p.stages;
    return name.str();
  }

  std::vector<Launch> launches(const AttentionPrefillConfig& config) const override {
    const AttentionPrefillSchedule& p = config.schedule;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_y = Extent{0, config.match.NH, 1};
    if (p.simt) {
      launch.grid_x = Extent{1, 0, p.warps};  // one warp per query row
      launch.block_x = static_cast<int>(p.warps * 32);
    } else {
      launch.grid_x = Extent{1, 0, p.block_m};  // query tiles
      launch.block_x = static_cast<int>(p.warps * 32);
      launch.shared_bytes = mma_shared_bytes(config.match.D, p.block_m, p.block_n, p.stages);
    }
    return {launch};
  }
};

}  // namespace

Match AttentionPrefillConfig::match_view() const {
  const AttentionPrefillMatch& a = match;
  Match m;
  m.variant = "causal";
  m.dtype = a.dtype;
  m.out_dtype = a.dtype;
  m.facts["NH"] = a.NH;
  m.facts["KV"] = a.KV;
  m.facts["D"] = a.D;
  m.facts["scale_bits"] = float_bits(a.scale);
  if (a.window > 0) m.facts["window"] = a.window;
  m.roles["q"] = a.q;
  m.roles["k"] = a.k;
  m.roles["v"] = a.v;
  m.roles["pos"] = a.pos;
  m.roles["o"] = a.o;
  return m;
}

ParamSet AttentionPrefillConfig::params_view() const {
  if (schedule.simt) return {{"fallback", 1}, {"warps", schedule.warps}};
  return {{"block_m", schedule.block_m}, {"block_n", schedule.block_n}, {"warps", schedule.warps}, {"stages", schedule.stages}};
}

AC_REGISTER_FAMILY(attention_prefill, 100, AttentionPrefillFamily)

}  // namespace agentcompile::plan
