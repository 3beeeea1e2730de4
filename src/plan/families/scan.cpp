// Scan family (src/kernels/scan.cuh): fusion regions with one cumsum or cumprod along the last axis
// and pointwise ops before and after it (a mask multiply, a cast), as a generated row program: TPR
// threads walk a row in chunks, scanning each chunk across the row and carrying its total forward.
// Scans along another axis are the column family's (columns.cpp).
#include <sstream>

#include "plan/families.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

class ScanFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "scan"; }
  std::string template_file() const override { return "scan.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->column_form()) return std::nullopt;
    if (ir::op_info(program->row_op()).op_class != ir::OpClass::kScan) return std::nullopt;
    if (program->cols > (int64_t{1} << 30)) return std::nullopt;
    return row_program_match(*program, std::string(ir::op_name(program->row_op())));
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    const RowProgram p = decode_row_program(m);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), row_vector_widths(p.cols, max_vec), 1 << 30, device)) {
      if (g.tpr > 32 && g.rows > 1) continue;  // a row wider than a warp takes the whole block
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"rows", g.rows}};
      RowGeometryChoice streamed = g;
      streamed.chunks = std::min(g.chunks, 4);
      c.score = row_geometry_score(streamed, max_vec, p.typical_rows(), device, &c.notes);
      // Every chunk costs a scan across the row (two barriers when the row spans warps).
      if (g.chunks > 8) c.score *= 0.5 + 4.0 / g.chunks;
      c.notes.push_back(std::to_string(g.chunks) + " chunk(s) per row, each scanned across the row and carried");
      out.push_back(std::move(c));
    }
    out.push_back(row_fallback_choice(p.cols, "conservative fallback: scalar accesses, one row per block"));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& params) const override {
    const RowProgram p = decode_row_program(m);
    std::ostringstream name;
    name << "scan_" << p.ops_tag() << "_" << dtype_tag(m.dtype) << "_h" << p.cols << "_" << rows_tag(p.rows_per_token(), p.rows_fixed())
         << "_" << row_program_digest(m) << "_t" << params.at("tpr") << "_v" << params.at("vec") << "_r" << params.at("rows");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& params) const override {
    return {row_launch(m, params, kernel_name(m, params))};
  }
};

}  // namespace

const TemplateFamily& scan_family() {
  static const ScanFamily family;
  return family;
}

}  // namespace agentcompile::plan
