// Reduction family (src/kernels/reduction.cuh): fusion regions ending in one reduce_sum, reduce_max,
// reduce_min, reduce_mean, reduce_prod, argmax or argmin over the last axis, possibly after pointwise
// ops, as a generated row program that streams each row once; few long rows split across blocks.
// Reductions over another axis are the column family's (columns.cpp).
#include <sstream>

#include "plan/families.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

class ReductionFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "reduction"; }
  std::string template_file() const override { return "reduction.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->column_form()) return std::nullopt;
    const ir::OpKind op = program->row_op();
    if (ir::op_info(op).op_class != ir::OpClass::kReduction) return std::nullopt;
    if (program->cols > (int64_t{1} << 30)) return std::nullopt;
    return row_program_match(*program, std::string(ir::op_name(op)));
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    const RowProgram p = decode_row_program(m);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), 1 << 30, device)) {
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"rows", g.rows}};
      // Nothing is held, so chunks only lengthen the loop: score a thread's share like a streamed
      // row of at most 4 chunks in flight, then prefer more threads on long, few rows.
      RowGeometryChoice streamed = g;
      streamed.chunks = std::min(g.chunks, 4);
      c.score = row_geometry_score(streamed, max_vec, p.typical_rows(), device, &c.notes);
      if (p.typical_rows() < device.multiprocessors && g.chunks > 4) c.score *= 4.0 / g.chunks + 0.5;
      out.push_back(std::move(c));
    }
    for (const RowSplitChoice& g : row_split_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec).front(), device)) {
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"split", g.split}};
      c.score = row_split_score(g, p.typical_rows(), device, &c.notes);
      out.push_back(std::move(c));
    }
    out.push_back(row_fallback_choice(p.cols, "conservative fallback: scalar accesses, one row per block"));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& params) const override {
    const RowProgram p = decode_row_program(m);
    std::ostringstream name;
    name << "reduce_" << p.ops_tag() << "_" << dtype_tag(m.dtype) << "_h" << p.cols << "_" << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_" << row_program_digest(m) << "_t"
         << params.at("tpr") << "_v" << params.at("vec");
    if (params.count("split"))
      name << "_s" << params.at("split");
    else
      name << "_r" << params.at("rows");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& params) const override {
    const Extent rows{m.facts.at("rows_per_token"), m.facts.at("rows_fixed"), 1};
    if (params.count("split")) {  // partials per (row, slice), then one warp per row combines them
      Launch partial;
      partial.kernel = kernel_name(m, params) + "_partial";
      partial.grid_x = rows;
      partial.grid_y = Extent{0, params.at("split"), 1};
      partial.block_x = static_cast<int>(params.at("tpr"));
      Launch combine;
      combine.kernel = kernel_name(m, params) + "_combine";
      combine.grid_x = rows;
      combine.block_x = 32;
      return {partial, combine};
    }
    return {row_launch(m, params, kernel_name(m, params))};
  }

  // The split form's partials: one (value, index) pair of 8 bytes per row and slice.
  int64_t workspace_bytes_per_token(const Match& m, const ParamSet& params) const override {
    return split_partials_per_token(m, params, 8);
  }
  int64_t workspace_bytes_fixed(const Match& m, const ParamSet& params) const override {
    return split_partials_fixed(m, params, 8);
  }
};

}  // namespace

const TemplateFamily& reduction_family() {
  static const ReductionFamily family;
  return family;
}

}  // namespace agentcompile::plan
