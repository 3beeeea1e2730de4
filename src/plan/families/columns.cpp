// Column family (src/kernels/columns.cuh): fusion regions with one reduction (sum, max, min, mean,
// prod, argmax, argmin) or scan (cumsum, cumprod) along a leading axis, after pointwise ops, as a
// generated row program over the flattened leading dims: one thread per output element (VEC adjacent
// columns of an output row) walks the axis with coalesced accesses. Reductions whose outputs are too
// few to fill the GPU split the axis across blocks (split=N, two launches, partials in the workspace).
// The record is in columns.h; codegen/renderers/columns.cpp writes the source.
#include "plan/families/columns.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace agentcompile::plan {

namespace {

bool is_scan(ir::OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kScan; }

// Output rows at a representative size (512 tokens where the outer dims hold T).
int64_t typical_out_rows(const RowProgram& p) {
  const int64_t outer = p.outer_per_token() > 0 ? p.outer_per_token() * 512 : p.outer_fixed();
  return outer * p.inner_rows();
}

class ColumnFamily final : public TypedFamily<RowProgram, ColumnConfig> {
 public:
  std::string name() const override { return "columns"; }
  std::string template_file() const override { return "columns.cuh"; }

  std::optional<RowProgram> match(const RegionContext& ctx) const override {
    auto program = analyze_row_program(ctx);
    if (!program || !program->column_form()) return std::nullopt;
    // Indices and lengths are ints on the device.
    if (program->reduced_length() >= (int64_t{1} << 31) || program->cols >= (int64_t{1} << 31)) return std::nullopt;
    return program;
  }

  std::vector<Choice> param_space(const RowProgram& p, const DeviceProfile& device) const override {
    const bool scan = is_scan(p.row_op());
    const int max_vec = p.max_vector();
    const int64_t n = p.reduced_length();
    std::vector<Choice> out;
    std::vector<int> vecs;
    for (int vec : {max_vec, max_vec / 2, 1})
      if (vec >= 1 && p.cols % vec == 0 && std::find(vecs.begin(), vecs.end(), vec) == vecs.end()) vecs.push_back(vec);
    const double slots = static_cast<double>(device.multiprocessors) * device.max_threads_per_sm;
    for (int vec : vecs)
      for (int threads : {128, 256}) {
        if (threads > device.max_threads_per_block) continue;
        const double items = static_cast<double>(typical_out_rows(p)) * static_cast<double>(p.cols / vec);
        for (int split : {1, 4, 16, 64}) {
          if (split > 1 && (scan || n / split < 16 || items * split / 2 > slots)) continue;  // enough threads already
          if (vec == 1 && threads == 256 && split == 1) continue;  // that is the fallback
          Choice c{ColumnConfig(p, ColumnSchedule{threads, vec, split > 1 ? split : 0, false})};
          // Threads in flight hide the walk's latency; wide vectors move more per access; a split
          // pays a second launch and its partials.
          const double fill = std::min(1.0, items * split / slots);
          const double vec_pref = vec >= max_vec ? 1.0 : vec * 2 >= max_vec ? 0.9 : 0.75;
          const double split_cost = split > 1 ? 0.93 : 1.0;
          c.score = (0.2 + 0.8 * fill) * vec_pref * split_cost * (threads == 256 ? 1.0 : 0.98);
          c.notes.push_back(std::to_string(static_cast<long long>(items)) + " threads walk " + std::to_string(n) + " rows" +
                            (split > 1 ? " in " + std::to_string(split) + " slices (second launch folds the partials)" : "") +
                            "; " + std::to_string(vec) + " column(s) each");
          out.push_back(std::move(c));
        }
      }
    Choice fallback{ColumnConfig(p, ColumnSchedule{256, 1, 0, true})};
    fallback.score = 0.01;
    fallback.notes = {"conservative fallback: one column per thread, no alignment assumed"};
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const ColumnConfig& config) const override {
    const RowProgram& p = config.program;
    const ColumnSchedule& s = config.schedule;
    std::ostringstream name;
    name << "columns_" << p.ops_tag() << "_" << dtype_tag(p.dtype()) << "_n" << p.reduced_length() << "_c" << p.cols << "_i"
         << p.inner_rows() << "_" << rows_tag(p.outer_per_token(), p.outer_fixed()) << "_" << row_program_digest(config.match_view())
         << "_t" << s.threads << "_v" << s.vec;
    if (s.split) name << "_s" << s.split;
    return name.str();
  }

  std::vector<Launch> launches(const ColumnConfig& config) const override {
    const RowProgram& p = config.program;
    const ColumnSchedule& s = config.schedule;
    const int64_t per_out_row = p.inner_rows() * (p.cols / s.vec);
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = Extent{p.outer_per_token() * per_out_row, p.outer_fixed() * per_out_row, s.threads};
    launch.block_x = static_cast<int>(s.threads);
    if (!s.split) return {launch};
    Launch partial = launch, combine = launch;
    partial.kernel += "_partial";
    partial.grid_y = Extent{0, s.split, 1};
    combine.kernel += "_combine";
    return {partial, combine};
  }

  // The split form's partials: (value, index) of 8 bytes per slice and output element.
  int64_t workspace_bytes_per_token(const ColumnConfig& config) const override {
    const RowProgram& p = config.program;
    return config.schedule.split * p.outer_per_token() * p.inner_rows() * p.cols * 8;
  }
  int64_t workspace_bytes_fixed(const ColumnConfig& config) const override {
    const RowProgram& p = config.program;
    return config.schedule.split * p.outer_fixed() * p.inner_rows() * p.cols * 8;
  }
};

}  // namespace

ParamSet ColumnConfig::params_view() const {
  ParamSet p{{"threads", schedule.threads}, {"vec", schedule.vec}};
  if (schedule.split) p["split"] = schedule.split;
  if (schedule.fallback) p["fallback"] = 1;
  return p;
}

AC_REGISTER_FAMILY(columns, 150, ColumnFamily)

}  // namespace agentcompile::plan
