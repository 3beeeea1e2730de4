// Decode GEMV family (src/kernels/gemv.cuh): matmul regions of one token, with the plain, cast,
// residual-add, gate/up act·mul (SiLU or GELU) and multi-segment (fused QKV) epilogues, and the
// RMSNorm prologue (weights of the activation dtype or f32), alone or after a residual-norm prologue
// (Gemma's post-norm and residual add, whose sum h block 0 writes).
// Planning side: matching, the parameter space and launch geometry; codegen/renderers/gemv.cpp
// writes the source.
#include <sstream>

#include <algorithm>

#include "plan/families.h"
#include "plan/families/matmul_match.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

class GemvFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "gemv"; }
  std::string template_file() const override { return "gemv.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    auto m = match_matmul_region(ctx, TokenCount::kOne);
    if (!m || m->dtype == ir::DType::kF32) return std::nullopt;
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t K = m.facts.at("K"), N = m.facts.at("N");
    const int mats = m.variant == "gate_up" ? 2 : 1;
    if (K * 2 > 48 * 1024) return out;  // x is staged in static shared memory
    for (int threads : {128, 256}) {
      for (int rows : {1, 2, 4}) {
        for (int unroll : {1, 2, 4}) {
          for (int split : {1, 2, 4}) {
            const int warps = threads / 32;
            if (warps % split != 0) continue;
            const int row_warps = warps / split;
            const int64_t k_per_split = K / split;
            // A split must give every lane at least one unrolled step (short K: one split, no unroll).
            if ((split > 1 || unroll > 1) && k_per_split < 256 * unroll) continue;
            if (split > 1 && k_per_split % 8 != 0) continue;
            const int loads_in_flight = unroll * rows * mats;  // 16-byte weight loads per lane
            if (loads_in_flight > 16) continue;  // register budget: 4 registers per load
            const int64_t blocks = (N + row_warps * rows - 1) / (row_warps * rows);
            Choice c;
            c.params = {{"threads", threads}, {"rows", rows}, {"unroll", unroll}, {"split", split}};
            // Heuristic: about two blocks per SM, 8 loads in flight per lane, and splits only where
            // rows are too few to fill the machine. Measured on H200 (decode-round4, gemv_admission_test):
            // the fastest schedule of every Qwen3/Llama decode matmul keeps 8 loads in flight, and the
            // small ones (QKV, o_proj, down) run fastest with ~256 blocks; more blocks with fewer loads
            // each (r1 u4 at 512 blocks for QKV: 9.4 us against 7.6-8.1) lose.
            const double fill = std::min(1.0, static_cast<double>(blocks) / (1.9 * device.multiprocessors));
            const double flight = loads_in_flight == 8 ? 1.0 : loads_in_flight == 4 ? 0.9 : loads_in_flight > 8 ? 0.8 : 0.6;
            const double split_penalty = split > 1 && blocks >= 2 * device.multiprocessors ? 0.85 : 1.0;
            c.score = fill * flight * split_penalty + (threads == 256 ? 0.01 : 0.0);
            c.notes.push_back(std::to_string(blocks) + " blocks, " + std::to_string(loads_in_flight) + " loads in flight per lane");
            out.push_back(std::move(c));
          }
        }
      }
    }
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& p) const override {
    std::ostringstream name;
    name << "gemv_" << matmul_prologue_tag(m) << m.variant << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_n" << m.facts.at("N") << "_k" << m.facts.at("K") << "_t" << p.at("threads") << "_r" << p.at("rows")
         << "_u" << p.at("unroll") << "_s" << p.at("split");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& p) const override {
    const int64_t row_warps = p.at("threads") / 32 / p.at("split");
    Launch launch;
    launch.kernel = kernel_name(m, p);
    launch.grid_x = Extent{0, m.facts.at("N"), row_warps * p.at("rows")};
    launch.block_x = static_cast<int>(p.at("threads"));
    return {launch};
  }

};

}  // namespace

const TemplateFamily& gemv_family() {
  static const GemvFamily family;
  return family;
}

}  // namespace agentcompile::plan
