// Decode GEMV family (src/kernels/gemv.cuh): matmul regions of one token, with the plain, cast,
// residual-add, gate/up SiLU·mul and multi-segment (fused QKV) epilogues. Planning side: matching,
// the parameter space and launch geometry; codegen/renderers/gemv.cpp writes the source.
#include <sstream>

#include <algorithm>

#include "plan/families.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

class GemvFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "gemv"; }
  std::string template_file() const override { return "gemv.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kMatmul) return std::nullopt;
    size_t linears = 0;
    while (linears < ctx.size() && ctx.node(static_cast<int>(linears)).op == OpKind::kLinear) ++linears;
    if (linears == 0 || linears > 3) return std::nullopt;
    const ir::Node& first = ctx.node(0);
    const auto& x_type = ctx.function->type(first.operands[0]);
    if (x_type.shape.size() != 2 || !x_type.shape[0].is_static() || x_type.shape[0].value != 1) return std::nullopt;

    Match m;
    m.dtype = x_type.dtype;
    m.out_dtype = m.dtype;
    const int64_t K = x_type.shape[1].value;
    if (K % 8 != 0 || m.dtype == ir::DType::kF32) return std::nullopt;
    m.facts["K"] = K;
    m.roles["x"] = ctx.slot_of(first.operands[0]);
    int64_t total_rows = 0;
    for (size_t i = 0; i < linears; ++i) {
      const ir::Node& lin = ctx.node(static_cast<int>(i));
      const std::string s = std::to_string(i);
      m.roles["w" + s] = ctx.slot_of(lin.operands[1]);
      if (lin.operands.size() == 3) m.roles["b" + s] = ctx.slot_of(lin.operands[2]);
      m.facts["rows" + s] = ctx.function->type(lin.result).shape[1].value;
      total_rows += m.facts["rows" + s];
      m.roles["y" + s] = ctx.slot_of(lin.result);
    }
    m.facts["N"] = total_rows;

    const size_t rest = ctx.size() - linears;
    if (rest == 0) {
      m.variant = linears == 1 ? "plain" : "multi";
    } else if (rest == 1 && linears == 1 && ctx.node(1).op == OpKind::kCast) {
      m.variant = "plain";
      m.out_dtype = ctx.function->type(ctx.node(1).result).dtype;
      m.roles["y0"] = ctx.slot_of(ctx.node(1).result);
    } else if (rest == 1 && linears == 1 && ctx.node(1).op == OpKind::kAdd) {
      const ir::Node& add = ctx.node(1);
      const int mine = add.operands[0] == first.result ? 0 : add.operands[1] == first.result ? 1 : -1;
      if (mine < 0) return std::nullopt;
      const ir::ValueId other = add.operands[static_cast<size_t>(1 - mine)];
      if (ctx.function->type(other).shape != ctx.function->type(add.result).shape) return std::nullopt;  // no broadcast
      m.variant = "residual";
      m.roles["residual"] = ctx.slot_of(other);
      m.roles["y0"] = ctx.slot_of(add.result);
    } else if (rest == 2 && linears == 2 && ctx.node(2).op == OpKind::kSilu && ctx.node(3).op == OpKind::kMul) {
      const ir::Node& silu = ctx.node(2);
      const ir::Node& mul = ctx.node(3);
      const ir::ValueId up = ctx.node(1).result;
      if (silu.operands[0] != first.result) return std::nullopt;
      const bool wired = (mul.operands[0] == silu.result && mul.operands[1] == up) ||
                         (mul.operands[1] == silu.result && mul.operands[0] == up);
      if (!wired) return std::nullopt;
      if (m.facts["rows0"] != m.facts["rows1"]) return std::nullopt;
      m.variant = "gate_up";
      m.facts["N"] = m.facts["rows0"];
      m.roles["y0"] = ctx.slot_of(mul.result);
      m.roles.erase("y1");
    } else {
      return std::nullopt;
    }
    for (const auto& [role, slot] : m.roles)
      if (slot.empty()) return std::nullopt;  // an intermediate escapes the region: not this family's shape
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
            // Heuristic: enough blocks to fill every SM twice, 4-8 loads in flight per lane, and
            // splits only where rows are too few to fill the machine.
            const double fill = std::min(1.0, static_cast<double>(blocks) / (2.0 * device.multiprocessors));
            const double flight = loads_in_flight >= 4 && loads_in_flight <= 8 ? 1.0 : loads_in_flight > 8 ? 0.8 : 0.6;
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
    name << "gemv_" << m.variant << "_" << dtype_tag(m.dtype);
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
