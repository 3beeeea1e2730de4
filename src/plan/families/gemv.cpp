// Decode GEMV family (src/kernels/gemv.cuh): matmul regions of one token, with the plain, cast,
// residual-add, gate/up act·mul (SiLU or GELU) and multi-segment (fused QKV) epilogues, and the
// RMSNorm prologue (weights of the activation dtype or f32), alone or after a residual-norm prologue
// (Gemma's post-norm and residual add, whose sum h block 0 writes).
// Planning side: matching, the parameter space and launch geometry; the record is in gemv.h, and
// codegen/renderers/gemv.cpp writes the source.
#include "plan/families/gemv.h"

#include <algorithm>
#include <sstream>

namespace agentcompile::plan {

namespace {

using ir::OpKind;

class GemvFamily final : public TypedFamily<MatmulMatch, GemvConfig> {
 public:
  std::string name() const override { return "gemv"; }
  std::string template_file() const override { return "gemv.cuh"; }

  std::optional<MatmulMatch> match(const RegionContext& ctx) const override {
    auto m = match_matmul_region(ctx, TokenCount::kOne);
    if (!m || m->dtype == ir::DType::kF32 || !weights_are_plain(*m)) return std::nullopt;  // quantized weights: qgemv
    return m;
  }

  std::vector<Choice> param_space(const MatmulMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t K = m.K, N = m.N;
    const int mats = m.epilogue == MatmulEpilogue::kGateUp ? 2 : 1;
    if (K * 2 > 48 * 1024) return out;  // x is staged in static shared memory
    // A split must give every lane at least one unrolled step (short K: one split, no unroll).
    auto fits_k = [K](int split, int unroll) {
      const int64_t k_per_split = K / split;
      return !((split > 1 || unroll > 1) && k_per_split < 256 * unroll) && !(split > 1 && k_per_split % 8 != 0);
    };
    for (const GemvGridPoint& point : gemv_grid(N, mats, fits_k)) {
      Choice c{GemvConfig(m, point.schedule)};
      // Heuristic: about two blocks per SM, 8 loads in flight per lane, and splits only where
      // rows are too few to fill the machine. Measured on H200 (decode-round4, gemv_admission_test):
      // the fastest schedule of every Qwen3/Llama decode matmul keeps 8 loads in flight, and the
      // small ones (QKV, o_proj, down) run fastest with ~256 blocks; more blocks with fewer loads
      // each (r1 u4 at 512 blocks for QKV: 9.4 us against 7.6-8.1) lose.
      const int loads = point.loads_in_flight;
      const double flight = loads == 8 ? 1.0 : loads == 4 ? 0.9 : loads > 8 ? 0.8 : 0.6;
      c.score = gemv_fill(point.blocks, device) * flight * gemv_split_penalty(point.schedule.split, point.blocks, device) +
                (point.schedule.threads == 256 ? 0.01 : 0.0);
      c.notes.push_back(std::to_string(point.blocks) + " blocks, " + std::to_string(loads) + " loads in flight per lane");
      out.push_back(std::move(c));
    }
    return out;
  }

  std::string kernel_name(const GemvConfig& config) const override {
    const MatmulMatch& m = config.match;
    const GemvSchedule& p = config.schedule;
    std::ostringstream name;
    name << "gemv_" << matmul_prologue_tag(m) << matmul_epilogue_name(m.epilogue) << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_n" << m.N << "_k" << m.K << "_t" << p.threads << "_r" << p.rows << "_u" << p.unroll << "_s" << p.split;
    return name.str();
  }

  std::vector<Launch> launches(const GemvConfig& config) const override {
    const GemvSchedule& p = config.schedule;
    const int64_t row_warps = p.threads / 32 / p.split;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = Extent{0, config.match.N, row_warps * p.rows};
    launch.block_x = static_cast<int>(p.threads);
    return {launch};
  }
};

}  // namespace

std::vector<GemvGridPoint> gemv_grid(int64_t N, int mats, const std::function<bool(int split, int unroll)>& fits_k) {
  std::vector<GemvGridPoint> out;
  for (int threads : {128, 256})
    for (int rows : {1, 2, 4})
      for (int unroll : {1, 2, 4})
        for (int split : {1, 2, 4}) {
          const int warps = threads / 32;
          if (warps % split != 0 || !fits_k(split, unroll)) continue;
          const int loads_in_flight = unroll * rows * mats;
          if (loads_in_flight > 16) continue;
          const int row_warps = warps / split;
          out.push_back({GemvSchedule{threads, rows, unroll, split}, (N + row_warps * rows - 1) / (row_warps * rows), loads_in_flight});
        }
  return out;
}

double gemv_fill(int64_t blocks, const DeviceProfile& device) {
  return std::min(1.0, static_cast<double>(blocks) / (1.9 * device.multiprocessors));
}

double gemv_split_penalty(int64_t split, int64_t blocks, const DeviceProfile& device) {
  return split > 1 && blocks >= 2 * device.multiprocessors ? 0.85 : 1.0;
}

Match GemvConfig::match_view() const {
  Match m;
  add_matmul_view(match, m);
  return m;
}

ParamSet GemvConfig::params_view() const {
  return {{"threads", schedule.threads}, {"rows", schedule.rows}, {"unroll", schedule.unroll}, {"split", schedule.split}};
}

AC_REGISTER_FAMILY(gemv, 10, GemvFamily)

}  // namespace agentcompile::plan
