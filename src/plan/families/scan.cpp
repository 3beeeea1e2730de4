// Scan family (src/kernels/scan.cuh): fusion regions with one cumsum or cumprod along the last axis
// and pointwise ops before and after it (a mask multiply, a cast), as a generated row program: TPR
// threads walk a row in chunks, scanning each chunk across the row and carrying its total forward.
// Scans along another axis are the column family's (columns.cpp).
// The record is in scan.h; codegen/renderers/scan.cpp writes the source.
#include "plan/families/scan.h"

#include <sstream>

namespace agentcompile::plan {

namespace {

class ScanFamily final : public TypedFamily<RowProgram, ScanConfig> {
 public:
  std::string name() const override { return "scan"; }
  std::string template_file() const override { return "scan.cuh"; }

  std::optional<RowProgram> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->column_form()) return std::nullopt;
    if (ir::op_info(program->row_op()).op_class != ir::OpClass::kScan) return std::nullopt;
    if (program->cols > (int64_t{1} << 30)) return std::nullopt;
    return program;
  }

  std::vector<Choice> param_space(const RowProgram& p, const DeviceProfile& device) const override {
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), 1 << 30, device)) {
      if (g.tpr > 32 && g.rows > 1) continue;  // a row wider than a warp takes the whole block
      Choice c{ScanConfig(p, row_schedule(g))};
      RowGeometryChoice streamed = g;
      streamed.chunks = std::min(g.chunks, 4);
      c.score = row_geometry_score(streamed, max_vec, p.typical_rows(), device, &c.notes);
      // Every chunk costs a scan across the row (two barriers when the row spans warps).
      if (g.chunks > 8) c.score *= 0.5 + 4.0 / g.chunks;
      c.notes.push_back(std::to_string(g.chunks) + " chunk(s) per row, each scanned across the row and carried");
      out.push_back(std::move(c));
    }
    out.push_back(Choice{ScanConfig(p, row_fallback_schedule(p.cols)), kRowFallbackScore,
                         {"conservative fallback: scalar accesses, one row per block"}});
    return out;
  }

  std::string kernel_name(const ScanConfig& config) const override {
    const RowProgram& p = config.program;
    const RowSchedule& s = config.schedule;
    std::ostringstream name;
    name << "scan_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_h" << p.cols << "_" << rows_tag(p.rows_per_token(), p.rows_fixed())
         << "_" << row_program_digest(config.match_view()) << "_t" << s.tpr << "_v" << s.vec << "_r" << s.rows;
    return name.str();
  }

  std::vector<Launch> launches(const ScanConfig& config) const override {
    const RowProgram& p = config.program;
    return {row_launch(p.rows_per_token(), p.rows_fixed(), config.schedule, kernel_name(config))};
  }
};

}  // namespace

AC_REGISTER_FAMILY(scan, 140, ScanFamily)

}  // namespace agentcompile::plan
