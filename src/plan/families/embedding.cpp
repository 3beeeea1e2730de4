// Embedding family (src/kernels/embedding.cuh): gather regions `embedding(table[V,H], ids i32[T])`,
// a row copy per token. Planning side; the record is in embedding.h, and
// codegen/renderers/embedding.cpp writes the source.
#include "plan/families/embedding.h"

#include <algorithm>
#include <sstream>

namespace agentcompile::plan {

namespace {

class EmbeddingFamily final : public TypedFamily<EmbeddingMatch, EmbeddingConfig> {
 public:
  std::string name() const override { return "embedding"; }
  std::string template_file() const override { return "embedding.cuh"; }

  std::optional<EmbeddingMatch> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kGather || ctx.size() != 1) return std::nullopt;
    const ir::Node& node = ctx.node(0);
    if (node.op != ir::OpKind::kEmbedding) return std::nullopt;
    const auto& table = ctx.function->type(node.operands[0]);
    const auto& ids = ctx.function->type(node.operands[1]);
    if (table.dtype != ir::DType::kF16 && table.dtype != ir::DType::kBF16 && table.dtype != ir::DType::kF32) return std::nullopt;
    if (table.shape.size() != 2 || !ir::shape_is_static(table.shape) || ids.dtype != ir::DType::kI32 || ids.shape.size() != 1)
      return std::nullopt;
    EmbeddingMatch m;
    m.dtype = table.dtype;
    m.table = ctx.slot_of(node.operands[0]);
    m.ids = ctx.slot_of(node.operands[1]);
    m.out = ctx.slot_of(node.result);
    if (m.table.rfind("w", 0) != 0 || m.ids.rfind("in", 0) != 0 || m.out.rfind("out", 0) != 0) return std::nullopt;
    m.V = table.shape[0].value;
    m.H = table.shape[1].value;
    const ir::Dim& tokens = ids.shape[0];
    if (tokens.is_static()) {
      m.rows_per_token = 0;
      m.rows_fixed = tokens.value;
    } else if (tokens.symbol == ir::Symbol::kT) {
      m.rows_per_token = 1;
      m.rows_fixed = 0;
    } else {
      return std::nullopt;
    }
    return m;
  }

  std::vector<Choice> param_space(const EmbeddingMatch& m, const DeviceProfile& device) const override {
    const int64_t H = m.H;
    const int64_t rows = m.rows_per_token > 0 ? 512 : m.rows_fixed;
    const int max_vec = static_cast<int>(16 / ir::dtype_size(m.dtype));
    std::vector<Choice> out;
    // A copy holds nothing, so any chunk count works; scored like a streamed row.
    for (const RowGeometryChoice& g : row_geometries(H, rows, {max_vec, max_vec / 2}, 1 << 30, device)) {
      if (g.tpr < 32) continue;
      Choice c{EmbeddingConfig(m, row_schedule(g))};
      RowGeometryChoice streamed = g;
      streamed.chunks = std::min(g.chunks, 4);
      c.score = row_geometry_score(streamed, max_vec, rows, device, &c.notes);
      if (g.chunks > 4) c.score *= 0.9;  // beyond 4 batches of loads, a longer serial copy
      out.push_back(std::move(c));
    }
    out.push_back(Choice{EmbeddingConfig(m, row_fallback_schedule(H)), kRowFallbackScore,
                         {"conservative fallback: element-wise copy, one row per block"}});
    return out;
  }

  std::string kernel_name(const EmbeddingConfig& config) const override {
    const EmbeddingMatch& m = config.match;
    const RowSchedule& s = config.schedule;
    std::ostringstream name;
    name << "embedding_" << dtype_tag(m.dtype) << "_vocab" << m.V << "_h" << m.H << "_" << rows_tag(m.rows_per_token, m.rows_fixed) << "_t"
         << s.tpr << "_v" << s.vec << "_r" << s.rows;
    return name.str();
  }

  std::vector<Launch> launches(const EmbeddingConfig& config) const override {
    return {row_launch(config.match.rows_per_token, config.match.rows_fixed, config.schedule, kernel_name(config))};
  }
};

}  // namespace

Match EmbeddingConfig::match_view() const {
  Match m;
  m.variant = "rows";
  m.dtype = match.dtype;
  m.out_dtype = match.dtype;
  m.roles["table"] = match.table;
  m.roles["ids"] = match.ids;
  m.roles["out"] = match.out;
  m.facts["V"] = match.V;
  m.facts["H"] = match.H;
  m.facts["rows_per_token"] = match.rows_per_token;
  m.facts["rows_fixed"] = match.rows_fixed;
  return m;
}

AC_REGISTER_FAMILY(embedding, 30, EmbeddingFamily)

}  // namespace agentcompile::plan
