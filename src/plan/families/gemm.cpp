// Prefill GEMM family (src/kernels/gemm.cuh): matmul regions over T tokens (or a static row count,
// such as the lm_head's last row) with the plain, cast, residual-add, gate/up act·mul (SiLU or GELU) and
// multi-segment (fused QKV) epilogues, or one linear followed by any pointwise chain (the "program"
// variant: the chain's generated row program runs on the accumulators in the GEMM's epilogue).
// Planning side: matching, the parameter space, a cost model
// that ranks tile shapes without knowing T, and launch geometry (grids that grow with T).
// The record is in gemm.h; codegen/renderers/gemm.cpp writes the source.
//
// Cost model (per candidate, at T = 512, 1024 and 2048 when T is symbolic, at M when it is static):
// a block's main loop runs at the SM's mma.sync rate, limited by the shared-memory bytes its warp
// tile reads per FLOP (ldmatrix) and the L2 bytes its block tile reads per FLOP, and discounted for
// few resident warps or a shallow pipeline; blocks run in waves of (SMs x resident blocks), so a
// grid that leaves the last wave mostly empty pays for a full one (wave quantization). The score is
// the ideal time (FLOPs at that rate, or bytes at memory bandwidth, whichever is longer) over the
// estimate, averaged over the T values, so tiles too large for short prompts rank lower.
//
// Measured on an H200 (Qwen3-1.7B prefill, T = 2048, f16; tests/gpu/gemm_test.cpp): the best
// candidates ran fused QKV at 415 TFLOP/s (128x128x64, 2x2 warps, 3 stages), o_proj + residual at
// 296 (128x128x32, 2x2, 4), gate/up + SiLU·mul at 433 (128x64x64 per matrix, 2x2, 3) and
// down + residual at 352 (64x128x64, 2x2, 4). Blocks of four warps with 64x64 warp tiles (A
// fragments shared by gate and up count double), two resident per SM, were consistently best.
// Small T is latency-bound (T = 37: 15-85 TFLOP/s, too few column tiles to fill the SMs).
#include "plan/families/gemm.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace agentcompile::plan {

namespace {

using ir::OpKind;

// Per SM and clock. mma.sync on Hopper reaches ~65% of the wgmma peak (4096 FLOP/clk/SM dense f16).
constexpr double kMmaFlopsPerClock = 2600;
constexpr double kSmemBytesPerClock = 128;
constexpr double kL2BytesPerClock = 64;
constexpr double kSimtFlopsPerClock = 256 * 0.5;  // 128 FP32 FMA lanes, half of it sustained
constexpr double kClockGhz = 1.75;

struct TileShape {
  int64_t bm, bn, bk, warps_m, warps_n, stages, mats;
  int64_t threads() const { return warps_m * warps_n * 32; }
  int64_t warp_m() const { return bm / warps_m; }
  int64_t warp_n() const { return bn / warps_n; }
  int64_t accumulators() const { return (warp_m() / 16) * (warp_n() / 8) * 4 * mats; }
  int64_t shared_bytes() const { return stages * (bm + mats * bn) * bk * 2; }
  // Accumulators, double-buffered A and W fragments, copy offsets and indices (fitted to ptxas on
  // sm_90a: ~150 for a 64x32 warp tile, 235-255 for 64x64).
  int64_t registers() const {
    const int64_t r = accumulators() + (warp_m() / 16) * 4 + (warp_n() / 8) * 2 + 56 + (accumulators() >= 128 ? 24 : 0);
    return std::min<int64_t>(255, (r + 7) / 8 * 8);
  }
};

int64_t resident_blocks(const TileShape& s, const DeviceProfile& device) {
  int64_t by_threads = device.max_threads_per_sm / s.threads();
  int64_t by_regs = device.registers_per_sm / (s.registers() * s.threads());
  int64_t by_shared = device.shared_per_sm / (s.shared_bytes() + 1024);  // 1 KB reserved per block
  return std::max<int64_t>(0, std::min({by_threads, by_regs, by_shared, int64_t{32}}));
}

struct Estimate {
  double seconds = 0;
  int64_t tiles = 0;
  int64_t waves = 0;
  double last_wave = 0;  // fraction of the last wave's slots that hold a block
};

Estimate estimate_mma(const TileShape& s, int64_t blocks_per_sm, int64_t M, int64_t N, int64_t K, const DeviceProfile& device) {
  const double mt = static_cast<double>(s.warp_m() / 16), nt = static_cast<double>(s.warp_n() / 8);
  // ldmatrix.x4 (512 bytes) per 16-wide k step: one per A 16x16 tile, one per two W 8-column tiles.
  const double smem_per_flop = 512.0 * (mt + nt * s.mats / 2) / (4096.0 * mt * nt * s.mats);
  const double l2_per_flop = static_cast<double>(s.bm + s.mats * s.bn) / static_cast<double>(s.bm * s.bn * s.mats);
  // Clocks per FLOP of the three pipes; the busiest sets the pace and the others still cost some.
  const double pipes[3] = {1.0 / kMmaFlopsPerClock, smem_per_flop / kSmemBytesPerClock, l2_per_flop / kL2BytesPerClock};
  const double busiest = std::max({pipes[0], pipes[1], pipes[2]});
  double rate = 1.0 / (busiest + 0.5 * (pipes[0] + pipes[1] + pipes[2] - busiest));
  // Latency hiding: resident warps, and whether another block runs while one waits at a barrier
  // (fitted to H200 measurements: one block of 8 warps ran ~15% slower than two of 4).
  const int64_t warps = blocks_per_sm * s.warps_m * s.warps_n;
  rate *= warps >= 8 ? 1.0 : 0.8;
  rate *= blocks_per_sm >= 2 ? 1.0 : 0.85;
  // Copies in flight, in k elements: (STAGES - 1) x BK (three stages of 64 ran ~3% ahead of four
  // of 32, which ran ~3% ahead of three of 32).
  const int64_t depth = (s.stages - 1) * s.bk;
  rate *= depth >= 128 ? 1.0 : depth >= 96 ? 0.97 : 0.94;
  // Square-ish warp grids (2x2, 2x4, 4x2) ran 4-7% ahead of 4x1 and 1x4 with the same tiles.
  rate *= s.warps_m == 4 * s.warps_n || s.warps_n == 4 * s.warps_m ? 0.95 : 1.0;
  Estimate e;
  const int64_t tiles_n = (N + s.bn - 1) / s.bn;
  e.tiles = (M + s.bm - 1) / s.bm * tiles_n;
  const int64_t slots = blocks_per_sm * device.multiprocessors;
  e.waves = (e.tiles + slots - 1) / slots;
  e.last_wave = static_cast<double>(e.tiles - (e.waves - 1) * slots) / static_cast<double>(slots);
  // A block shares its SM with blocks_per_sm - 1 others; the pipeline fill costs ~2 k steps and
  // each k step a barrier bubble (~400 clocks measured, hidden by the other resident blocks).
  const double k_steps = static_cast<double>(K / s.bk + 2);
  const double step_clocks = 2.0 * s.bm * s.bn * s.mats * s.bk / (rate / blocks_per_sm) + 400.0 / blocks_per_sm;
  const double block_seconds = k_steps * step_clocks / (kClockGhz * 1e9);
  e.seconds = static_cast<double>(e.waves) * block_seconds;
  return e;
}

double ideal_seconds(int64_t M, int64_t N, int64_t K, int64_t mats, const DeviceProfile& device) {
  const double flops = 2.0 * M * N * K * mats;
  const double bytes = 2.0 * (M * K + mats * N * K + M * N);
  return std::max(flops / (kMmaFlopsPerClock * device.multiprocessors * kClockGhz * 1e9),
                  bytes / (device.memory_bandwidth_gbs * 1e9));
}

std::string percent(double v) { return std::to_string(static_cast<int>(std::lround(100 * v))) + "%"; }

class GemmFamily final : public TypedFamily<GemmMatch, GemmConfig> {
 public:
  std::string name() const override { return "gemm"; }
  std::string template_file() const override { return "gemm.cuh"; }

  std::optional<GemmMatch> match(const RegionContext& ctx) const override {
    auto base = match_matmul_region(ctx, TokenCount::kAny);
    if (!base) return match_program(ctx);
    const MatmulMatch& m = *base;
    if (!weights_are_plain(m)) return std::nullopt;  // quantized weights: qgemv
    if (m.norm) return std::nullopt;  // a norm prologue is a one-token (GEMV) fusion
    // What the tensor-core tiles add to the shared matcher: 16-bit inputs, K in mma steps, column pairs
    // that never straddle a segment edge, one dtype through the epilogue, and nothing else escaping.
    if (m.dtype != ir::DType::kF16 && m.dtype != ir::DType::kBF16) return std::nullopt;
    if (m.K % 16 != 0) return std::nullopt;
    const ir::Dim rows = ctx.function->type(ctx.node(0).operands[0]).shape[0];
    if (!rows.is_static() && rows.symbol != ir::Symbol::kT) return std::nullopt;
    for (const MatmulSegment& segment : m.segments)
      if (segment.rows % 8 != 0) return std::nullopt;
    // A gate/up epilogue computes in f32 whatever casts the graph puts around it; its output is T.
    if (m.epilogue == MatmulEpilogue::kGateUp) {
      if (m.out_dtype != m.dtype) return std::nullopt;
    } else if (m.epilogue != MatmulEpilogue::kPlain || m.out_dtype == m.dtype) {
      for (size_t i = 0; i < ctx.size(); ++i)
        if (ctx.function->type(ctx.node(static_cast<int>(i)).result).dtype != m.dtype) return std::nullopt;
    }
    const size_t outputs = m.epilogue == MatmulEpilogue::kMulti ? m.segments.size() : 1;
    if (ctx.region->outputs.size() != outputs) return std::nullopt;  // an intermediate escapes the region
    return GemmMatch{std::move(*base), rows.is_static() ? rows.value : 0};  // 0: M = T at launch
  }

  // One linear over [M or T, K] in f16/bf16 followed by any pointwise epilogue (matmul_general.h):
  // the epilogue's row program runs on the accumulators, in the GEMM's own epilogue.
  std::optional<GemmMatch> match_program(const RegionContext& ctx) const {
    auto m = match_general_matmul(ctx);
    if (!m || !m->epilogue || m->trans_a || !m->trans_b) return std::nullopt;
    if (m->dtype != ir::DType::kF16 && m->dtype != ir::DType::kBF16) return std::nullopt;
    if (m->K % 16 != 0 || m->N % 8 != 0) return std::nullopt;
    if (m->epilogue->lead.size() != 1) return std::nullopt;  // rows of x as they are: [M, N]
    const int64_t M = m->M;  // 0: T rows
    return GemmMatch{std::move(*m), M};
  }

  std::vector<Choice> param_space(const GemmMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t K = m.K(), N = m.N();
    const int64_t mats = m.mats();
    const bool static_rows = m.M != 0;
    const std::vector<int64_t> rows_at = static_rows ? std::vector<int64_t>{m.M} : std::vector<int64_t>{512, 1024, 2048};
    // A block stays inside one segment: every segment but the last is a multiple of its columns.
    auto segments_fit = [&](int64_t bn) {
      const MatmulMatch* fixed = m.fixed();
      if (!fixed || fixed->epilogue != MatmulEpilogue::kMulti) return true;
      for (size_t s = 0; s + 1 < fixed->segments.size(); ++s)
        if (fixed->segments[s].rows % bn != 0) return false;
      return true;
    };
    // Small static row counts (one token) belong to the GEMV family; stay in the space, ranked below it.
    const double small_rows = static_rows && m.M < 16 ? 0.5 : 1.0;

    for (int64_t bm : {32, 64, 128, 256})
      for (int64_t bn : {64, 128, 256})
        for (int64_t bk : {32, 64})
          for (auto [wm, wn] : {std::pair<int64_t, int64_t>{2, 2}, {2, 4}, {4, 2}, {1, 4}, {4, 1}})
            for (int64_t stages : {3, 4}) {  // two stages leave one k tile to hide a load
              const TileShape s{bm, bn, bk, wm, wn, stages, mats};
              if (K % bk != 0 || !segments_fit(bn)) continue;
              if (s.warp_m() % 16 != 0 || s.warp_n() % 16 != 0 || s.warp_n() < 32) continue;
              if (s.threads() > 256 || s.accumulators() > 128) continue;  // more would spill
              if ((bm * bk / 8) % s.threads() != 0 || (bn * bk / 8) % s.threads() != 0) continue;
              if (s.shared_bytes() > device.shared_per_block_optin) continue;
              if (bn > 64 * ((N + 63) / 64)) continue;  // wider than the matrix
              const int64_t blocks_per_sm = resident_blocks(s, device);
              if (blocks_per_sm == 0) continue;
              Choice c{GemmConfig(m, GemmTile{false, bm, bn, bk, wm, wn, stages})};
              double score = 0;
              for (int64_t rows : rows_at) {
                const Estimate e = estimate_mma(s, blocks_per_sm, rows, N, K, device);
                score += ideal_seconds(rows, N, K, mats, device) / std::max(e.seconds, ideal_seconds(rows, N, K, mats, device));
                if (rows == rows_at.back())
                  c.notes.push_back((static_rows ? "M=" : "T=") + std::to_string(rows) + ": " + std::to_string(e.tiles) + " tiles, " +
                                    std::to_string(blocks_per_sm) + " blocks/SM, " + std::to_string(e.waves) +
                                    " wave(s), last wave " + percent(e.last_wave) + " full, est " +
                                    std::to_string(static_cast<int>(e.seconds * 1e6)) + " us");
              }
              c.score = small_rows * score / static_cast<double>(rows_at.size());
              c.notes.push_back("warp tile " + std::to_string(s.warp_m()) + "x" + std::to_string(s.warp_n()) + ", " +
                                std::to_string(s.shared_bytes() / 1024) + " KB shared, ~" + std::to_string(s.registers()) +
                                " registers");
              out.push_back(std::move(c));
            }

    // The conservative fallback: fp32 FMA tiles, any K % 16, segments of 64 columns.
    if (segments_fit(64)) {
      GemmTile simt;
      simt.simt = true;
      simt.bm = 64;
      simt.bn = 64;
      simt.bk = 16;
      simt.tm = 4;
      simt.tn = 4;
      Choice c{GemmConfig(m, simt)};
      double score = 0;
      for (int64_t rows : rows_at) {
        const double tiles = std::ceil(rows / 64.0) * std::ceil(N / 64.0);
        const double flops = 2.0 * 64 * 64 * mats * K * std::ceil(tiles / (2.0 * device.multiprocessors)) * 2.0 * device.multiprocessors;
        const double seconds = flops / (kSimtFlopsPerClock * device.multiprocessors * kClockGhz * 1e9);
        score += ideal_seconds(rows, N, K, mats, device) / std::max(seconds, ideal_seconds(rows, N, K, mats, device));
      }
      c.score = small_rows * score / static_cast<double>(rows_at.size());
      c.notes.push_back("fallback: fp32 FMA on 64x64 shared tiles, no tensor cores");
      out.push_back(std::move(c));
    }
    return out;
  }

  std::string kernel_name(const GemmConfig& config) const override {
    const GemmMatch& m = config.match;
    const GemmTile& p = config.tile;
    std::ostringstream name;
    const MatmulMatch* fixed = m.fixed();
    name << (p.simt ? "gemm_simt_" : "gemm_mma_") << (fixed ? matmul_epilogue_name(fixed->epilogue) + matmul_epilogue_tag(*fixed) : "program")
         << "_" << dtype_tag(m.dtype());
    if (m.out_dtype() != m.dtype()) name << "_to_" << dtype_tag(m.out_dtype());
    name << "_n" << m.N() << "_k" << m.K();
    if (const GeneralMatmul* program = m.program()) name << "_" << program->epilogue->ops_tag() << "_" << row_program_digest(config.match_view());
    if (m.M != 0) name << "_m" << m.M;
    name << "_b" << p.bm << "x" << p.bn << "x" << p.bk;
    if (p.simt)
      name << "_t" << p.tm << "x" << p.tn;
    else
      name << "_w" << p.wm << "x" << p.wn << "_s" << p.stages;
    return name.str();
  }

  std::vector<Launch> launches(const GemmConfig& config) const override {
    const GemmMatch& m = config.match;
    const GemmTile& p = config.tile;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = Extent{0, m.N(), p.bn};
    launch.grid_y = m.M != 0 ? Extent{0, m.M, p.bm} : Extent{1, 0, p.bm};
    if (p.simt) {
      launch.block_x = static_cast<int>((p.bm / p.tm) * (p.bn / p.tn));
    } else {
      launch.block_x = static_cast<int>(p.wm * p.wn * 32);
      launch.shared_bytes = p.stages * (p.bm + m.mats() * p.bn) * p.bk * 2;
    }
    return {launch};
  }
};

}  // namespace

ir::DType GemmMatch::dtype() const { return fixed() ? fixed()->dtype : program()->dtype; }
ir::DType GemmMatch::out_dtype() const { return fixed() ? fixed()->out_dtype : program()->out_dtype; }
int64_t GemmMatch::N() const { return fixed() ? fixed()->N : program()->N; }
int64_t GemmMatch::K() const { return fixed() ? fixed()->K : program()->K; }
int64_t GemmMatch::mats() const { return fixed() && fixed()->epilogue == MatmulEpilogue::kGateUp ? 2 : 1; }

Match GemmConfig::match_view() const {
  Match m;
  if (const MatmulMatch* fixed = match.fixed()) {
    add_matmul_view(*fixed, m);
    if (match.M != 0) m.facts["M"] = match.M;
    for (size_t s = 0; s < fixed->segments.size(); ++s) m.facts["cols" + std::to_string(s)] = fixed->segments[s].rows;  // the GEMM's output columns
  } else {
    add_general_matmul_view(*match.program(), m);
    if (match.M == 0) m.facts.erase("M");  // T rows
    m.facts["cols0"] = match.program()->N;
  }
  return m;
}

ParamSet GemmConfig::params_view() const {
  if (tile.simt) return {{"bm", tile.bm}, {"bn", tile.bn}, {"bk", tile.bk}, {"tm", tile.tm}, {"tn", tile.tn}, {"fallback", 1}};
  return {{"bm", tile.bm}, {"bn", tile.bn}, {"bk", tile.bk}, {"wm", tile.wm}, {"wn", tile.wn}, {"stages", tile.stages}};
}

AC_REGISTER_FAMILY(gemm, 90, GemmFamily)

}  // namespace agentcompile::plan
