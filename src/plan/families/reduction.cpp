// Reduction family (src/kernels/reduction.cuh): fusion regions ending in one reduce_sum, reduce_max,
// reduce_min, reduce_mean, reduce_prod, argmax or argmin over the last axis, possibly after pointwise
// ops, as a generated row program that streams each row once; few long rows split across blocks.
// Reductions over another axis are the column family's (columns.cpp).
// The record is in reduction.h; codegen/renderers/reduction.cpp writes the source.
#include "plan/families/reduction.h"

#include <sstream>

namespace agentcompile::plan {

namespace {

class ReductionFamily final : public TypedFamily<RowProgram, ReductionConfig> {
 public:
  std::string name() const override { return "reduction"; }
  std::string template_file() const override { return "reduction.cuh"; }

  std::optional<RowProgram> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->column_form()) return std::nullopt;
    const ir::OpKind op = program->row_op();
    if (ir::op_info(op).op_class != ir::OpClass::kReduction) return std::nullopt;
    if (program->cols > (int64_t{1} << 30)) return std::nullopt;
    return program;
  }

  std::vector<Choice> param_space(const RowProgram& p, const DeviceProfile& device) const override {
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), 1 << 30, device)) {
      Choice c{ReductionConfig(p, row_schedule(g))};
      // Nothing is held, so chunks only lengthen the loop: score a thread's share like a streamed
      // row of at most 4 chunks in flight, then prefer more threads on long, few rows.
      RowGeometryChoice streamed = g;
      streamed.chunks = std::min(g.chunks, 4);
      c.score = row_geometry_score(streamed, max_vec, p.typical_rows(), device, &c.notes);
      if (p.typical_rows() < device.multiprocessors && g.chunks > 4) c.score *= 4.0 / g.chunks + 0.5;
      out.push_back(std::move(c));
    }
    for (const RowSplitChoice& g : row_split_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec).front(), device)) {
      Choice c{ReductionConfig(p, row_schedule(g))};
      c.score = row_split_score(g, p.typical_rows(), device, &c.notes);
      out.push_back(std::move(c));
    }
    out.push_back(Choice{ReductionConfig(p, row_fallback_schedule(p.cols)), kRowFallbackScore,
                         {"conservative fallback: scalar accesses, one row per block"}});
    return out;
  }

  std::string kernel_name(const ReductionConfig& config) const override {
    const RowProgram& p = config.program;
    const RowSchedule& s = config.schedule;
    std::ostringstream name;
    name << "reduce_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_h" << p.cols << "_" << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_"
         << row_program_digest(config.match_view()) << "_t" << s.tpr << "_v" << s.vec;
    if (s.split)
      name << "_s" << s.split;
    else
      name << "_r" << s.rows;
    return name.str();
  }

  std::vector<Launch> launches(const ReductionConfig& config) const override {
    const RowProgram& p = config.program;
    const RowSchedule& s = config.schedule;
    const Extent rows{p.rows_per_token(), p.rows_fixed(), 1};
    if (s.split) {  // partials per (row, slice), then one warp per row combines them
      Launch partial;
      partial.kernel = kernel_name(config) + "_partial";
      partial.grid_x = rows;
      partial.grid_y = Extent{0, s.split, 1};
      partial.block_x = static_cast<int>(s.tpr);
      Launch combine;
      combine.kernel = kernel_name(config) + "_combine";
      combine.grid_x = rows;
      combine.block_x = 32;
      return {partial, combine};
    }
    return {row_launch(p.rows_per_token(), p.rows_fixed(), s, kernel_name(config))};
  }

  // The split form's partials: one (value, index) pair of 8 bytes per row and slice.
  int64_t workspace_bytes_per_token(const ReductionConfig& config) const override {
    return split_partials(config.program.rows_per_token(), config.schedule, 8);
  }
  int64_t workspace_bytes_fixed(const ReductionConfig& config) const override {
    return split_partials(config.program.rows_fixed(), config.schedule, 8);
  }
};

}  // namespace

AC_REGISTER_FAMILY(reduction, 60, ReductionFamily)

}  // namespace agentcompile::plan
