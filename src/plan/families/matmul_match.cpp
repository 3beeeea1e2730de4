// Matching matmul regions and their epilogues (see matmul_match.h).
#include "plan/families/matmul_match.h"

#include <bit>
#include <cstdint>

namespace agentcompile::plan {

using ir::OpKind;

std::optional<Match> match_matmul_region(const RegionContext& ctx, TokenCount tokens) {
  if (ctx.region->kind != analysis::RegionKind::kMatmul) return std::nullopt;
  // An RMSNorm prologue: the linears read its result, the region reads its input.
  const bool norm = ctx.size() > 1 && ctx.node(0).op == OpKind::kRmsNorm;
  const size_t first_linear = norm ? 1 : 0;
  size_t end = first_linear;
  while (end < ctx.size() && ctx.node(static_cast<int>(end)).op == OpKind::kLinear) ++end;
  const size_t linears = end - first_linear;
  if (linears == 0 || linears > 3) return std::nullopt;
  const ir::Node& first = ctx.node(static_cast<int>(first_linear));
  const ir::ValueId x = norm ? ctx.node(0).operands[0] : first.operands[0];
  const auto& x_type = ctx.function->type(x);
  if (x_type.shape.size() != 2) return std::nullopt;
  const bool one_token = x_type.shape[0].is_static() && x_type.shape[0].value == 1;
  if (tokens == TokenCount::kOne && !one_token) return std::nullopt;

  Match m;
  m.dtype = x_type.dtype;
  m.out_dtype = m.dtype;
  const int64_t K = x_type.shape[1].value;
  if (K % 8 != 0) return std::nullopt;
  m.facts["K"] = K;
  m.roles["x"] = ctx.slot_of(x);
  if (norm) {
    const ir::Node& rms = ctx.node(0);
    if (!one_token || ctx.function->type(rms.operands[1]).dtype != m.dtype ||
        ctx.function->type(rms.result).dtype != m.dtype || first.operands[0] != rms.result)
      return std::nullopt;
    m.roles["norm_w"] = ctx.slot_of(rms.operands[1]);
    const float eps = static_cast<float>(rms.float_attr("eps"));
    m.facts["norm"] = 1;
    m.facts["norm_eps_bits"] = std::bit_cast<uint32_t>(eps);
  }
  int64_t total_rows = 0;
  for (size_t i = 0; i < linears; ++i) {
    const ir::Node& lin = ctx.node(static_cast<int>(first_linear + i));
    if (lin.operands[0] != first.operands[0]) return std::nullopt;  // horizontal fusion reads one input
    const std::string s = std::to_string(i);
    m.roles["w" + s] = ctx.slot_of(lin.operands[1]);
    if (lin.operands.size() == 3) m.roles["b" + s] = ctx.slot_of(lin.operands[2]);
    m.facts["rows" + s] = ctx.function->type(lin.result).shape[1].value;
    total_rows += m.facts["rows" + s];
    m.roles["y" + s] = ctx.slot_of(lin.result);
  }
  m.facts["N"] = total_rows;

  const size_t rest = ctx.size() - end;
  auto at = [&](size_t i) -> const ir::Node& { return ctx.node(static_cast<int>(first_linear + i)); };
  if (rest == 0) {
    m.variant = linears == 1 ? "plain" : "multi";
  } else if (rest == 1 && linears == 1 && at(1).op == OpKind::kCast) {
    m.variant = "plain";
    m.out_dtype = ctx.function->type(at(1).result).dtype;
    m.roles["y0"] = ctx.slot_of(at(1).result);
  } else if (rest == 1 && linears == 1 && at(1).op == OpKind::kAdd) {
    const ir::Node& add = at(1);
    const int mine = add.operands[0] == first.result ? 0 : add.operands[1] == first.result ? 1 : -1;
    if (mine < 0) return std::nullopt;
    const ir::ValueId other = add.operands[static_cast<size_t>(1 - mine)];
    if (ctx.function->type(other).shape != ctx.function->type(add.result).shape) return std::nullopt;  // no broadcast
    m.variant = "residual";
    m.roles["residual"] = ctx.slot_of(other);
    m.roles["y0"] = ctx.slot_of(add.result);
  } else if (rest == 2 && linears == 2 && at(2).op == OpKind::kSilu && at(3).op == OpKind::kMul) {
    const ir::Node& silu = at(2);
    const ir::Node& mul = at(3);
    const ir::ValueId up = at(1).result;
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

float matmul_norm_eps(const Match& match) {
  auto it = match.facts.find("norm_eps_bits");
  return it == match.facts.end() ? 0.f : std::bit_cast<float>(static_cast<uint32_t>(it->second));
}

}  // namespace agentcompile::plan
