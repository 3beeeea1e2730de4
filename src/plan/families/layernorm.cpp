// LayerNorm family (src/kernels/layernorm.cuh): fusion regions with one layer_norm (weight and bias
// optional) over the last axis and pointwise ops before and after it, as a generated row program.
// Rows that fit in registers are read once (cache=1); longer rows are streamed twice (cache=0), and
// few long rows are split across blocks (split=N, two launches).
// The record is in layernorm.h; codegen/renderers/layernorm.cpp writes the source.
#include "plan/families/layernorm.h"

#include <sstream>

namespace agentcompile::plan {

namespace {

constexpr int kRegisterFloats = 128;

class LayerNormFamily final : public TypedFamily<RowProgram, LayerNormConfig> {
 public:
  std::string name() const override { return "layernorm"; }
  std::string template_file() const override { return "layernorm.cuh"; }

  std::optional<RowProgram> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->row_op() != ir::OpKind::kLayerNorm) return std::nullopt;
    if (program->cols > (int64_t{1} << 30)) return std::nullopt;
    return program;
  }

  std::vector<Choice> param_space(const RowProgram& p, const DeviceProfile& device) const override {
    const int arrays = static_cast<int>(p.loads.size()) + p.pre_steps() + 1;
    const int max_elems = std::max(8, kRegisterFloats / arrays);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), max_elems, device)) {
      Choice c{LayerNormConfig(p, LayerNormSchedule{row_schedule(g), true})};
      c.score = row_geometry_score(g, max_vec, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row kept in registers: read once, mean then squared deviations");
      out.push_back(std::move(c));
    }
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), {row_vector_widths(p.cols, max_vec).front()}, 1 << 30, device)) {
      if (g.chunks * g.vec <= max_elems && !out.empty()) continue;
      if (g.tpr < 128 && p.cols >= 4096) continue;
      Choice c{LayerNormConfig(p, LayerNormSchedule{row_schedule(g), false})};
      RowGeometryChoice as_one_chunk = g;
      as_one_chunk.chunks = std::min(g.chunks, 4);
      c.score = 0.8 * row_geometry_score(as_one_chunk, max_vec, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row streamed twice: shifted sums, then normalize");
      out.push_back(std::move(c));
    }
    for (const RowSplitChoice& g : row_split_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec).front(), device)) {
      Choice c{LayerNormConfig(p, LayerNormSchedule{row_schedule(g), false})};
      c.score = row_split_score(g, p.typical_rows(), device, &c.notes);
      c.notes.push_back("row streamed twice: per-slice shifted sums, then normalize");
      out.push_back(std::move(c));
    }
    out.push_back(Choice{LayerNormConfig(p, LayerNormSchedule{row_fallback_schedule(p.cols), false}), kRowFallbackScore,
                         {"conservative fallback: scalar accesses, streamed row, one row per block"}});
    return out;
  }

  std::string kernel_name(const LayerNormConfig& config) const override {
    const RowProgram& p = config.program;
    const RowSchedule& s = config.schedule.rows;
    std::ostringstream name;
    name << "layernorm_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_h" << p.cols << "_" << eps_tag(p.eps) << "_"
         << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_" << row_program_digest(config.match_view()) << "_t" << s.tpr << "_v" << s.vec;
    if (s.split)
      name << "_s" << s.split;
    else
      name << "_r" << s.rows << "_c" << config.schedule.cache;
    return name.str();
  }

  std::vector<Launch> launches(const LayerNormConfig& config) const override {
    const RowProgram& p = config.program;
    // Split: shifted sums per (row, slice), then write
    return row_or_split_launches(p.rows_per_token(), p.rows_fixed(), config.schedule.rows, kernel_name(config));
  }

  // The split form's partials: one (sum, sum of squares) pair of 8 bytes per row and slice.
  int64_t workspace_bytes_per_token(const LayerNormConfig& config) const override {
    return split_partials(config.program.rows_per_token(), config.schedule.rows, 8);
  }
  int64_t workspace_bytes_fixed(const LayerNormConfig& config) const override {
    return split_partials(config.program.rows_fixed(), config.schedule.rows, 8);
  }
};

}  // namespace

ParamSet LayerNormConfig::params_view() const {
  ParamSet p = row_params_view(schedule.rows);
  if (!schedule.rows.split) p["cache"] = schedule.cache;
  return p;
}

AC_REGISTER_FAMILY(layernorm, 130, LayerNormFamily)

}  // namespace agentcompile::plan
