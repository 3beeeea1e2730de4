// Prefill attention family (src/kernels/attention_prefill.cuh): the attention regions of a prefill
// (T queries, causal from position pos, GQA, optionally a sliding window) in f16/bf16. Planning side:
// the match, the FlashAttention-2 tile space (BLOCK_M rows per block, 16 or 32 per warp; BLOCK_N keys
// per tile; a STAGES-deep cp.async ring) filtered by shared memory and registers, for D = 64, 96 and
// 128, and the SIMT fallback, for every D that is a multiple of 32 up to 256. At D = 256 the mma
// kernel's Q fragments and O accumulators alone (3D/4 = 192 registers per thread) leave no room under
// the register budget, so Gemma-3's prefill attention runs on the SIMT kernel (one warp per query
// row; with its 512-key window a query reads at most 512 keys) or the reference family.
// codegen/renderers/attention_prefill.cpp writes the source.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "plan/families.h"

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

class AttentionPrefillFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "attention_prefill"; }
  std::string template_file() const override { return "attention_prefill.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
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

    Match m;
    m.variant = "causal";
    m.dtype = q.dtype;
    m.out_dtype = q.dtype;
    m.facts["NH"] = NH;
    m.facts["KV"] = KV;
    m.facts["D"] = D;
    m.facts["scale_bits"] = float_bits(static_cast<float>(attn.float_attr("scale", 1.0)));
    if (attn.int_attr("window", 0) > 0) m.facts["window"] = attn.int_attr("window", 0);
    m.roles["q"] = ctx.slot_of(attn.operands[0]);
    m.roles["k"] = ctx.slot_of(attn.operands[1]);
    m.roles["v"] = ctx.slot_of(attn.operands[2]);
    m.roles["pos"] = ctx.slot_of(attn.operands[3]);
    m.roles["o"] = ctx.slot_of(attn.result);
    for (const auto& [role, slot] : m.roles)
      if (slot.empty()) return std::nullopt;
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t D = m.facts.at("D");
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
              Choice c;
              c.params = {{"block_m", block_m}, {"block_n", block_n}, {"warps", warps}, {"stages", stages}};
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
    Choice fallback;
    fallback.params = {{"fallback", 1}, {"warps", kFallbackWarps}};
    fallback.score = 0.05;
    fallback.notes.push_back("SIMT reference: one warp per query row, keys one at a time");
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& p) const override {
    std::ostringstream name;
    name << "attention_prefill_" << (p.count("fallback") ? "simt" : "mma") << "_" << dtype_tag(m.dtype) << "_h"
         << m.facts.at("NH") << "_kv" << m.facts.at("KV") << "_d" << m.facts.at("D");
    // The scale is a value, not a tile choice; spelled only when it is not the usual 1/sqrt(D).
    const auto usual = float_bits(static_cast<float>(1.0 / std::sqrt(static_cast<double>(m.facts.at("D")))));
    if (m.facts.at("scale_bits") != usual) name << "_sc" << std::hex << m.facts.at("scale_bits") << std::dec;
    if (m.facts.count("window")) name << "_win" << m.facts.at("window");
    if (p.count("fallback"))
      name << "_w" << p.at("warps");
    else
      name << "_m" << p.at("block_m") << "_n" << p.at("block_n") << "_w" << p.at("warps") << "_s" << p.at("stages");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& p) const override {
    Launch launch;
    launch.kernel = kernel_name(m, p);
    launch.grid_y = Extent{0, m.facts.at("NH"), 1};
    if (p.count("fallback")) {
      launch.grid_x = Extent{1, 0, p.at("warps")};  // one warp per query row
      launch.block_x = static_cast<int>(p.at("warps") * 32);
    } else {
      launch.grid_x = Extent{1, 0, p.at("block_m")};  // query tiles
      launch.block_x = static_cast<int>(p.at("warps") * 32);
      launch.shared_bytes = mma_shared_bytes(m.facts.at("D"), p.at("block_m"), p.at("block_n"), p.at("stages"));
    }
    return {launch};
  }
};

}  // namespace

const TemplateFamily& attention_prefill_family() {
  static const AttentionPrefillFamily family;
  return family;
}

}  // namespace agentcompile::plan
