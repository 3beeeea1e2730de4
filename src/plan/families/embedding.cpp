// Embedding family (src/kernels/embedding.cuh): gather regions `embedding(table[V,H], ids i32[T])`,
// a row copy per token. Planning side; codegen/renderers/embedding.cpp writes the source.
#include <algorithm>
#include <sstream>

#include "plan/families.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

class EmbeddingFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "embedding"; }
  std::string template_file() const override { return "embedding.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kGather || ctx.size() != 1) return std::nullopt;
    const ir::Node& node = ctx.node(0);
    if (node.op != ir::OpKind::kEmbedding) return std::nullopt;
    const auto& table = ctx.function->type(node.operands[0]);
    const auto& ids = ctx.function->type(node.operands[1]);
    if (table.dtype != ir::DType::kF16 && table.dtype != ir::DType::kBF16 && table.dtype != ir::DType::kF32) return std::nullopt;
    if (table.shape.size() != 2 || !ir::shape_is_static(table.shape) || ids.dtype != ir::DType::kI32 || ids.shape.size() != 1)
      return std::nullopt;
    Match m;
    m.variant = "rows";
    m.dtype = table.dtype;
    m.out_dtype = table.dtype;
    m.roles["table"] = ctx.slot_of(node.operands[0]);
    m.roles["ids"] = ctx.slot_of(node.operands[1]);
    m.roles["out"] = ctx.slot_of(node.result);
    if (m.roles["table"].rfind("w", 0) != 0 || m.roles["ids"].rfind("in", 0) != 0 || m.roles["out"].rfind("out", 0) != 0)
      return std::nullopt;
    m.facts["V"] = table.shape[0].value;
    m.facts["H"] = table.shape[1].value;
    const ir::Dim& tokens = ids.shape[0];
    if (tokens.is_static()) {
      m.facts["rows_per_token"] = 0;
      m.facts["rows_fixed"] = tokens.value;
    } else if (tokens.symbol == ir::Symbol::kT) {
      m.facts["rows_per_token"] = 1;
      m.facts["rows_fixed"] = 0;
    } else {
      return std::nullopt;
    }
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    const int64_t H = m.facts.at("H");
    const int64_t rows = m.facts.at("rows_per_token") > 0 ? 512 : m.facts.at("rows_fixed");
    const int max_vec = static_cast<int>(16 / ir::dtype_size(m.dtype));
    std::vector<Choice> out;
    // A copy holds nothing, so any chunk count works; scored like a streamed row.
    for (const RowGeometryChoice& g : row_geometries(H, rows, {max_vec, max_vec / 2}, 1 << 30, device)) {
      if (g.tpr < 32) continue;
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"rows", g.rows}};
      RowGeometryChoice streamed = g;
      streamed.chunks = std::min(g.chunks, 4);
      c.score = row_geometry_score(streamed, max_vec, rows, device, &c.notes);
      if (g.chunks > 4) c.score *= 0.9;  // beyond 4 batches of loads, a longer serial copy
      out.push_back(std::move(c));
    }
    out.push_back(row_fallback_choice(H, "conservative fallback: element-wise copy, one row per block"));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& params) const override {
    std::ostringstream name;
    name << "embedding_" << dtype_tag(m.dtype) << "_vocab" << m.facts.at("V") << "_h" << m.facts.at("H") << "_"
         << rows_tag(m.facts.at("rows_per_token"), m.facts.at("rows_fixed")) << "_t" << params.at("tpr")
         << "_v" << params.at("vec") << "_r" << params.at("rows");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& params) const override {
    return {row_launch(m, params, kernel_name(m, params))};
  }
};

}  // namespace

const TemplateFamily& embedding_family() {
  static const EmbeddingFamily family;
  return family;
}

}  // namespace agentcompile::plan
