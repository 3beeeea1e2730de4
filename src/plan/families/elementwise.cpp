// Elementwise family (src/kernels/elementwise.cuh): fusion regions made only of pointwise ops
// (add, sub, mul, div, silu, exp, neg, cast) with numpy broadcasting, as a generated row program
// over [rows, cols]; vectorized along the columns whenever cols allows.
// The record is in elementwise.h; codegen/renderers/elementwise.cpp writes the source.
#include "plan/families/elementwise.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace agentcompile::plan {

namespace {

// Whether the chain has an op fast_math.cuh shortens and stores every result in 16 bits (where the
// short forms' ~1e-6 relative error is far below the output's rounding).
bool has_fast_form(const RowProgram& p) {
  for (const RowProgram::Store& store : p.stores)
    if (store.dtype != ir::DType::kF16 && store.dtype != ir::DType::kBF16) return false;
  for (const RowProgram::Step& step : p.steps)
    if (step.op == ir::OpKind::kExpm1 || step.op == ir::OpKind::kSigmoid || step.op == ir::OpKind::kErf ||
        (step.op == ir::OpKind::kGelu && !(step.flags & 1)))  // GELU's erf form (flag 1: the tanh form)
      return true;
  return false;
}

class ElementwiseFamily final : public TypedFamily<RowProgram, ElementwiseConfig> {
 public:
  std::string name() const override { return "elementwise"; }
  std::string template_file() const override { return "elementwise.cuh"; }

  std::optional<RowProgram> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || program->has_row_op() || program->stores.empty()) return std::nullopt;
    return program;
  }

  std::vector<Choice> param_space(const RowProgram& p, const DeviceProfile& device) const override {
    const int max_vec = p.max_vector();
    const double elements = static_cast<double>(p.typical_rows()) * static_cast<double>(p.cols);
    // Threads the machine holds at once: below that the whole chain is one wave and latency rules.
    const bool small = elements < static_cast<double>(device.multiprocessors) * device.max_threads_per_sm;
    std::vector<Choice> out;
    // Vectors where the row length allows; scalar accesses (with the fallback's geometry left to
    // the fallback) where it does not.
    std::vector<int> vecs;
    for (int vec : {max_vec, max_vec / 2})
      if (vec >= 2 && p.cols % vec == 0) vecs.push_back(vec);
    if (vecs.empty()) vecs.push_back(1);
    for (int vec : vecs) {
      for (int threads : {128, 256, 512}) {
        if (threads > device.max_threads_per_block) continue;
        for (int unroll : {1, 2, 4}) {
          const double blocks = std::ceil(elements / (static_cast<double>(vec) * threads * unroll));
          if (unroll > 1 && blocks < 1.5) continue;  // one block already covers everything
          if (vec == 1 && threads == 256 && unroll == 1) continue;  // that is the fallback
          Choice c{ElementwiseConfig(p, ElementwiseSchedule{threads, vec, unroll, false})};
          const double vec_pref = vec == max_vec ? 1.0 : vec * 2 == max_vec ? 0.85 : 0.6;
          const double unroll_pref = small ? (unroll == 1 ? 1.0 : unroll == 2 ? 0.95 : 0.9)
                                           : (unroll == 2 ? 1.0 : unroll == 4 ? 0.98 : 0.96);
          const double threads_pref = threads == 256 ? 1.0 : threads == 128 ? 0.98 : 0.97;
          const double fill = small ? 1.0 : std::min(1.0, blocks / (2.0 * device.multiprocessors));
          c.score = vec_pref * unroll_pref * threads_pref * fill;
          c.notes.push_back(std::to_string(static_cast<long long>(blocks)) + " blocks at " +
                            std::to_string(p.typical_rows()) + " rows; " + std::to_string(unroll * vec) +
                            " elements per thread" + (small ? "; one wave: latency-bound" : ""));
          out.push_back(std::move(c));
        }
      }
    }
    // expm1, sigmoid or erf stored in 16 bits: the accurate library forms (~30 instructions an element)
    // bind a large kernel to the issue rate before memory (SELU in f16). The best geometry again with
    // the shorter forms of fast_math.cuh, ranked just below it (a form of its own, so a capped space
    // keeps it and loses one geometry at most).
    if (has_fast_form(p) && !out.empty()) {
      const Choice& best = *std::max_element(out.begin(), out.end(), [](const Choice& a, const Choice& b) { return a.score < b.score; });
      ElementwiseSchedule s = best.config.schedule;
      s.fast_math = true;
      Choice f{ElementwiseConfig(p, s)};
      f.score = best.score * 0.999;
      f.form = "fast_math";
      f.notes = best.notes;
      f.notes.push_back("expm1 / sigmoid / erf (GELU's too) in their short forms (fast_math.cuh): results stored in 16 bits");
      out.push_back(std::move(f));
    }
    Choice fallback{ElementwiseConfig(p, ElementwiseSchedule{256, 1, 1, true})};
    fallback.score = 0.01;
    fallback.notes = {"conservative fallback: one element per thread, no alignment assumed"};
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const ElementwiseConfig& config) const override {
    const RowProgram& p = config.program;
    const ElementwiseSchedule& s = config.schedule;
    std::ostringstream name;
    name << "elementwise_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_c" << p.cols << "_" << rows_tag(p.rows_per_token(), p.rows_fixed())
         << "_" << row_program_digest(config.match_view()) << "_t" << s.threads << "_v" << s.vec << "_u" << s.unroll;
    if (s.fast_math) name << "_fm";
    return name.str();
  }

  std::vector<Launch> launches(const ElementwiseConfig& config) const override {
    const RowProgram& p = config.program;
    const ElementwiseSchedule& s = config.schedule;
    const int64_t per_row = p.cols / s.vec;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = Extent{p.rows_per_token() * per_row, p.rows_fixed() * per_row, s.threads * s.unroll};
    launch.block_x = static_cast<int>(s.threads);
    return {launch};
  }
};

}  // namespace

ParamSet ElementwiseConfig::params_view() const {
  ParamSet p{{"threads", schedule.threads}, {"vec", schedule.vec}, {"unroll", schedule.unroll}};
  if (schedule.fallback) p["fallback"] = 1;
  if (schedule.fast_math) p["fast_math"] = 1;
  return p;
}

AC_REGISTER_FAMILY(elementwise, 40, ElementwiseFamily)

}  // namespace agentcompile::plan
