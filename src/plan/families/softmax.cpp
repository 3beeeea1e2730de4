// Softmax family (src/kernels/softmax.cuh): fusion regions with one stable softmax or log_softmax
// over the last axis and pointwise ops before and after it, as a generated row program. Rows that fit in
// registers are read once (cache=1); longer rows are streamed twice (cache=0), and few long rows
// are split across blocks (split=N, two launches).
// The record is in softmax.h; codegen/renderers/softmax.cpp writes the source.
#include "plan/families/softmax.h"

#include <sstream>

namespace agentcompile::plan {

namespace {

constexpr int kRegisterFloats = 128;

class SoftmaxFamily final : public TypedFamily<RowProgram, SoftmaxConfig> {
 public:
  std::string name() const override { return "softmax"; }
  std::string template_file() const override { return "softmax.cuh"; }

  std::optional<RowProgram> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op()) return std::nullopt;
    if (program->row_op() != ir::OpKind::kSoftmax && program->row_op() != ir::OpKind::kLogSoftmax) return std::nullopt;
    if (program->cols > (int64_t{1} << 24)) return std::nullopt;
    return program;
  }

  std::vector<Choice> param_space(const RowProgram& p, const DeviceProfile& device) const override {
    const int arrays = static_cast<int>(p.loads.size()) + p.pre_steps() + 1;
    const int max_elems = std::max(8, kRegisterFloats / arrays);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    // Register-resident rows: one read.
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), max_elems, device)) {
      Choice c{SoftmaxConfig(p, SoftmaxSchedule{row_schedule(g), true})};
      c.score = row_geometry_score(g, max_vec, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row kept in registers: read once");
      out.push_back(std::move(c));
    }
    // Streamed rows: any length, two reads; wide rows only (short ones are better cached).
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), {row_vector_widths(p.cols, max_vec).front()}, 1 << 30, device)) {
      if (g.chunks * g.vec <= max_elems && !out.empty()) continue;
      if (g.tpr < 128 && p.cols >= 4096) continue;
      Choice c{SoftmaxConfig(p, SoftmaxSchedule{row_schedule(g), false})};
      RowGeometryChoice as_one_chunk = g;
      as_one_chunk.chunks = std::min(g.chunks, 4);  // streaming pays per pass, not per chunk held
      c.score = 0.8 * row_geometry_score(as_one_chunk, max_vec, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row streamed twice: online max/sum, then normalize");
      out.push_back(std::move(c));
    }
    for (const RowSplitChoice& g : row_split_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec).front(), device)) {
      Choice c{SoftmaxConfig(p, SoftmaxSchedule{row_schedule(g), false})};
      c.score = row_split_score(g, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row streamed twice: per-slice online max/sum, then normalize");
      out.push_back(std::move(c));
    }
    out.push_back(Choice{SoftmaxConfig(p, SoftmaxSchedule{row_fallback_schedule(p.cols), false}), kRowFallbackScore,
                         {"conservative fallback: scalar accesses, streamed row, one row per block"}});
    return out;
  }

  std::string kernel_name(const SoftmaxConfig& config) const override {
    const RowProgram& p = config.program;
    const RowSchedule& s = config.schedule.rows;
    std::ostringstream name;
    name << "softmax_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_h" << p.cols << "_"
         << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_" << row_program_digest(config.match_view()) << "_t" << s.tpr << "_v" << s.vec;
    if (s.split)
      name << "_s" << s.split;
    else
      name << "_r" << s.rows << "_c" << config.schedule.cache;
    return name.str();
  }

  std::vector<Launch> launches(const SoftmaxConfig& config) const override {
    const RowProgram& p = config.program;
    // Split: (max, sum) pairs per (row, slice), then write
    return row_or_split_launches(p.rows_per_token(), p.rows_fixed(), config.schedule.rows, kernel_name(config));
  }

  // The split form's partials: one (max, sum) pair of 8 bytes per row and slice.
  int64_t workspace_bytes_per_token(const SoftmaxConfig& config) const override {
    return split_partials(config.program.rows_per_token(), config.schedule.rows, 8);
  }
  int64_t workspace_bytes_fixed(const SoftmaxConfig& config) const override {
    return split_partials(config.program.rows_fixed(), config.schedule.rows, 8);
  }
};

}  // namespace

ParamSet SoftmaxConfig::params_view() const {
  ParamSet p = row_params_view(schedule.rows);
  if (!schedule.rows.split) p["cache"] = schedule.cache;
  return p;
}

AC_REGISTER_FAMILY(softmax, 50, SoftmaxFamily)

}  // namespace agentcompile::plan
