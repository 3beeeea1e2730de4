// RMSNorm family (src/kernels/rmsnorm.cuh): fusion regions with one rmsnorm over rows, alone
// ("plain": x, w and y of one dtype, a fixed kernel) or with pointwise ops around it ("fused": a
// generated row program, e.g. residual add + rmsnorm writing both the sum and the normed rows).
// Planning side; codegen/renderers/rmsnorm.cpp writes the source.
#include <sstream>

#include "plan/families.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

// Floats a thread may keep per value array of its row share (registers: ~128 live floats).
constexpr int kRegisterFloats = 128;

bool is_plain(const RowProgram& p) {
  if (p.steps.size() != 1 || p.loads.size() != 2 || p.stores.size() != 1) return false;
  const RowProgram::Load& x = p.loads[static_cast<size_t>(p.steps[0].a)];
  const RowProgram::Load& w = p.loads[static_cast<size_t>(p.steps[0].b)];
  const ir::DType t = x.dtype;
  if (w.dtype != t || p.stores[0].dtype != t || x.col_stride != 1 || w.col_stride != 1) return false;
  // x is the contiguous [rows, H] itself; w is one row broadcast over all.
  int64_t stride = p.cols;
  for (size_t d = p.lead.size(); d-- > 0;) {
    if (x.row_strides[d] != stride || w.row_strides[d] != 0) return false;
    stride *= p.lead[d] == 0 ? 1 : p.lead[d];
  }
  return true;
}

class RmsNormFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "rmsnorm"; }
  std::string template_file() const override { return "rmsnorm.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->row_op() != ir::OpKind::kRmsNorm) return std::nullopt;
    if (program->cols > 32768) return std::nullopt;  // the row lives in registers
    return row_program_match(*program, is_plain(*program) ? "plain" : "fused");
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile& device) const override {
    const RowProgram p = decode_row_program(m);
    // Arrays a thread keeps per chunk: every load, every value before the norm, and x.
    const int arrays = static_cast<int>(p.loads.size()) + p.pre_steps() + 1;
    const int max_elems = std::max(8, kRegisterFloats / arrays);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), {max_vec, max_vec / 2}, max_elems, device)) {
      Choice c;
      c.params = {{"tpr", g.tpr}, {"vec", g.vec}, {"rows", g.rows}};
      c.score = row_geometry_score(g, max_vec, p.typical_rows(), device, &c.notes);
      out.push_back(std::move(c));
    }
    // Fallback: scalar accesses, one row per block, the fewest threads that keep the row share small.
    out.push_back(row_fallback_choice(p.cols, "conservative fallback: scalar accesses, no alignment assumed, one row per block"));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& params) const override {
    const RowProgram p = decode_row_program(m);
    std::ostringstream name;
    if (m.variant == "plain") {
      name << "rmsnorm_" << dtype_tag(m.dtype) << "_h" << p.cols << "_" << eps_tag(p.eps) << "_" << rows_tag(p.rows_per_token(), p.rows_fixed());
    } else {
      name << "rmsnorm_" << p.ops_tag() << "_" << dtype_tag(m.dtype) << "_h" << p.cols << "_" << eps_tag(p.eps) << "_"
           << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_" << row_program_digest(m);
    }
    name << "_t" << params.at("tpr") << "_v" << params.at("vec") << "_r" << params.at("rows");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& params) const override {
    return {row_launch(m, params, kernel_name(m, params))};
  }
};

}  // namespace

const TemplateFamily& rmsnorm_family() {
  static const RmsNormFamily family;
  return family;
}

}  // namespace agentcompile::plan
