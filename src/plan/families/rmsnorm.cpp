// RMSNorm family (src/kernels/rmsnorm.cuh): fusion regions with one rmsnorm over rows, alone
// ("plain": x, w and y of one dtype, a fixed kernel) or with pointwise ops around it ("fused": a
// generated row program, e.g. residual add + rmsnorm writing both the sum and the normed rows).
// Planning side; the record is in rmsnorm.h, and codegen/renderers/rmsnorm.cpp writes the source.
#include "plan/families/rmsnorm.h"

#include <sstream>

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

class RmsNormFamily final : public TypedFamily<RmsNormMatch, RmsNormConfig> {
 public:
  std::string name() const override { return "rmsnorm"; }
  std::string template_file() const override { return "rmsnorm.cuh"; }

  std::optional<RmsNormMatch> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->has_row_op() || program->row_op() != ir::OpKind::kRmsNorm) return std::nullopt;
    if (program->cols > 32768) return std::nullopt;  // the row lives in registers
    const bool plain = is_plain(*program);
    return RmsNormMatch{std::move(*program), plain};
  }

  std::vector<Choice> param_space(const RmsNormMatch& m, const DeviceProfile& device) const override {
    const RowProgram& p = m.program;
    // Arrays a thread keeps per chunk: every load, every value before the norm, and x.
    const int arrays = static_cast<int>(p.loads.size()) + p.pre_steps() + 1;
    const int max_elems = std::max(8, kRegisterFloats / arrays);
    const int max_vec = p.max_vector();
    std::vector<Choice> out;
    for (const RowGeometryChoice& g : row_geometries(p.cols, p.typical_rows(), {max_vec, max_vec / 2}, max_elems, device)) {
      Choice c{RmsNormConfig(m, row_schedule(g))};
      c.score = row_geometry_score(g, max_vec, p.typical_rows(), device, &c.notes);
      out.push_back(std::move(c));
    }
    // Fallback: scalar accesses, one row per block, the fewest threads that keep the row share small.
    Choice fallback{RmsNormConfig(m, row_fallback_schedule(p.cols)), kRowFallbackScore,
                    {"conservative fallback: scalar accesses, no alignment assumed, one row per block"}};
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const RmsNormConfig& config) const override {
    const RowProgram& p = config.match.program;
    const RowSchedule& s = config.schedule;
    std::ostringstream name;
    if (config.match.plain) {
      name << "rmsnorm_" << dtype_tag(p.dtype()) << "_h" << p.cols << "_" << eps_tag(p.eps) << "_" << rows_tag(p.rows_per_token(), p.rows_fixed());
    } else {
      name << "rmsnorm_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_h" << p.cols << "_" << eps_tag(p.eps) << "_"
           << rows_tag(p.rows_per_token(), p.rows_fixed()) << "_" << row_program_digest(config.match_view());
    }
    name << "_t" << s.tpr << "_v" << s.vec << "_r" << s.rows;
    return name.str();
  }

  std::vector<Launch> launches(const RmsNormConfig& config) const override {
    const RowProgram& p = config.match.program;
    return {row_launch(p.rows_per_token(), p.rows_fixed(), config.schedule, kernel_name(config))};
  }
};

}  // namespace

AC_REGISTER_FAMILY(rmsnorm, 20, RmsNormFamily)

}  // namespace agentcompile::plan
