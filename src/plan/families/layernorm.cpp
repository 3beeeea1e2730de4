// LayerNorm family (src/kernels/layernorm.cuh): fusion regions with one layer_norm (weight and bias
// optional) over the last axis and pointwise ops before and after it, as a generated row program.
// Rows that fit in registers are read once (cache=1); longer rows are streamed twice (cache=0), and
// few long rows are split across blocks (split=N, two launches).
#include <sstream>

#include "plan/families.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

constexpr int kRegisterFloats = 128;

class LayerNormFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "layernorm"; }
  std::string template_file() const override { return "layernorm.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->row_op() != ir::OpKind::kLayerNorm) return std::nullopt;
    if (program->cols > (int64_t{1} << 30)) return std::nullopt;
    return row_program_match(*program, "rows");
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    const RowProgram p = decode_row_program(m);
    const int arrays = static_cast<int>(p.loads.size()) + p.pre_steps() + 1;
    const int max_elems = std::max(8, kRegisterFloats / arrays);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), max_elems, device)) {
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"rows", g.rows}, {"cache", 1}};
      c.score = row_geometry_score(g, max_vec, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row kept in registers: read once, mean then squared deviations");
      out.push_back(std::move(c));
    }
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), {row_vector_widths(p.cols, max_vec).front()}, 1 << 30, device)) {
      if (g.chunks * g.vec <= max_elems && !out.empty()) continue;
      if (g.tpr < 128 && p.cols >= 4096) continue;
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"rows", g.rows}, {"cache", 0}};
      RowGeometryChoice as_one_chunk = g;
      as_one_chunk.chunks = std::min(g.chunks, 4);
      c.score = 0.8 * row_geometry_score(as_one_chunk, max_vec, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row streamed twice: shifted sums, then normalize");
      out.push_back(std::move(c));
    }
    for (const RowSplitChoice& g : row_split_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec).front(), device)) {
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"split", g.split}};
      c.score = row_split_score(g, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row streamed twice: per-slice shifted sums, then normalize");
      out.push_back(std::move(c));
    }
    out.push_back(row_fallback_choice(p.cols, "conservative fallback: scalar accesses, streamed row, one row per block", {{"cache", 0}}));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& params) const override {
    const RowProgram p = decode_row_program(m);
    std::ostringstream name;
    name << "layernorm_" << p.ops_tag() << "_" << dtype_tag(m.dtype) << "_h" << p.cols << "_" << eps_tag(p.eps) << "_"
         << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_" << row_program_digest(m) << "_t" << params.at("tpr") << "_v"
         << params.at("vec");
    if (params.count("split"))
      name << "_s" << params.at("split");
    else
      name << "_r" << params.at("rows") << "_c" << params.at("cache");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& params) const override {
    return row_or_split_launches(m, params, kernel_name(m, params));  // split: shifted sums per (row, slice), then write
  }

  // The split form's partials: one (sum, sum of squares) pair of 8 bytes per row and slice.
  int64_t workspace_bytes_per_token(const Match& m, const ParamSet& params) const override {
    return split_partials_per_token(m, params, 8);
  }
  int64_t workspace_bytes_fixed(const Match& m, const ParamSet& params) const override {
    return split_partials_fixed(m, params, 8);
  }
};

}  // namespace

const TemplateFamily& layernorm_family() {
  static const LayerNormFamily family;
  return family;
}

}  // namespace agentcompile::plan
