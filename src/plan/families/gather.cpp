// Gather family (src/kernels/copy.cuh): index_select, gather (torch.gather) and embedding regions
// whose table the embedding family does not take (not a weight), and index_copy (a scatter into a
// state: the region's side effect). Views as [outer, N, inner] around the indexed axis:
//   index_select / embedding: out[k, j, i] = x[k, idx[j], i]       (axis 0 may have T rows)
//   gather:                   out[c] = x[c with c[axis] = idx[c]]  (x read with its own strides)
//   index_copy:               state[k, idx[j], i] = src[k, j, i]
// An index outside the axis writes a poison value (NaN for floats) instead of faulting; index_copy
// skips it. The record and its serialized view are in gather.h; codegen/renderers/gather.cpp writes
// the source.
#include "plan/families/gather.h"

#include <algorithm>
#include <sstream>

namespace agentcompile::plan {

namespace {

using ir::OpKind;

class GatherFamily final : public TypedFamily<GatherMatch, GatherConfig> {
 public:
  std::string name() const override { return "gather"; }
  std::string template_file() const override { return "copy.cuh"; }

  std::optional<GatherMatch> match(const RegionContext& ctx) const override {
    if (ctx.size() != 1) return std::nullopt;
    const ir::Node& node = ctx.node(0);
    const ir::Function& f = *ctx.function;
    GatherMatch m;
    m.op = node.op;
    const ir::ValueId data = node.operands[0];
    const ir::TensorType& x = f.type(data);
    m.dtype = x.dtype;
    if (ir::is_quantized(x.dtype) || x.dtype == ir::DType::kI64 || !ir::shape_is_static(x.shape)) return std::nullopt;
    const ir::Shape* space = nullptr;
    int64_t axis = node.int_attr("axis");
    switch (node.op) {
      case OpKind::kEmbedding:
        if (ctx.slot_of(data).rfind("w", 0) == 0) return std::nullopt;  // the embedding family's
        m.op = OpKind::kIndexSelect;
        axis = 0;
        [[fallthrough]];
      case OpKind::kIndexSelect:
      case OpKind::kGather:
        if (ctx.region->kind != analysis::RegionKind::kGather) return std::nullopt;
        space = &f.type(node.result).shape;
        m.data = ctx.slot_of(data);
        m.dest = ctx.slot_of(node.result);
        break;
      case OpKind::kIndexCopy: {
        const auto& states = ctx.region->states;
        auto it = std::find(states.begin(), states.end(), node.string_attr("state"));
        if (it == states.end()) return std::nullopt;
        space = &x.shape;
        m.data = ctx.slot_of(data);
        m.dest = "state" + std::to_string(it - states.begin());
        const ir::Shape& state = f.type(node.result).shape;
        if (!ir::shape_is_static(state)) return std::nullopt;
        if (axis < 0) axis += static_cast<int64_t>(state.size());
        m.xdim = state[static_cast<size_t>(axis)].value;
        break;
      }
      default: return std::nullopt;
    }
    m.idx = ctx.slot_of(node.operands[1]);
    if (m.data.empty() || m.dest.empty() || m.idx.empty()) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(space->size());
    if (axis < 0) axis += rank;
    m.axis = axis;
    for (int64_t j = 0; j < rank; ++j) {
      const ir::Dim& d = (*space)[static_cast<size_t>(j)];
      // T rows only where they are the indexed axis of an index_select (an embedding of T ids).
      if (!d.is_static() && !(j == 0 && axis == 0 && d.symbol == ir::Symbol::kT && m.op == OpKind::kIndexSelect)) return std::nullopt;
      m.dims.push_back(d.is_static() ? d.value : 0);
    }
    if (node.op != OpKind::kIndexCopy) m.xdim = x.shape[static_cast<size_t>(axis)].value;
    if (node.op == OpKind::kGather) {
      m.x_strides.assign(static_cast<size_t>(rank), 0);
      int64_t stride = 1;
      for (int64_t j = rank; j-- > 0;) {
        m.x_strides[static_cast<size_t>(j)] = stride;
        stride *= x.shape[static_cast<size_t>(j)].value;
      }
    }
    return m;
  }

  std::vector<Choice> param_space(const GatherMatch& m, const DeviceProfile&) const override {
    std::vector<Choice> out;
    // Rows of `inner` elements move together (index_select, index_copy); gather reads per element.
    int max_vec = m.op == OpKind::kGather ? 1 : static_cast<int>(std::min<int64_t>(8, 16 / static_cast<int64_t>(ir::dtype_size(m.dtype))));
    while (max_vec > 1 && m.inner() % max_vec != 0) max_vec /= 2;
    for (int vec : {max_vec, max_vec / 2}) {
      if (vec < 2) continue;
      Choice c{GatherConfig(m, GatherSchedule{vec, 256, false})};
      c.score = vec == max_vec ? 1.0 : 0.9;
      c.notes.push_back(std::to_string(vec) + " elements per thread, one index read per vector");
      out.push_back(std::move(c));
    }
    Choice fallback{GatherConfig(m, GatherSchedule{1, 256, true})};
    fallback.score = 0.01;
    fallback.notes = {"conservative fallback: one element per thread"};
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const GatherConfig& config) const override {
    const GatherMatch& m = config.match;
    std::ostringstream name;
    name << (m.op == OpKind::kIndexCopy ? "scatter_" : "gather_") << ir::op_name(m.op) << "_" << dtype_tag(m.dtype) << "_a" << m.axis << "_x"
         << m.xdim << "_";
    for (size_t j = 0; j < m.dims.size(); ++j) name << (j ? "x" : "") << (m.dims[j] ? std::to_string(m.dims[j]) : "T");
    name << "_v" << config.schedule.vec << "_t" << config.schedule.threads;
    return name.str();
  }

  std::vector<Launch> launches(const GatherConfig& config) const override {
    const GatherMatch& m = config.match;
    const GatherSchedule& s = config.schedule;
    int64_t elements = 1;
    for (int64_t d : m.dims) elements *= d ? d : 1;
    const bool per_token = m.dims[0] == 0;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.block_x = static_cast<int>(s.threads);
    const int64_t vectors = elements / s.vec;
    launch.grid_x = per_token ? Extent{vectors, 0, s.threads} : Extent{0, vectors, s.threads};
    return {launch};
  }
};

}  // namespace

int64_t GatherMatch::inner() const {
  int64_t inner = 1;
  for (size_t j = static_cast<size_t>(axis) + 1; j < dims.size(); ++j) inner *= dims[j];
  return inner;
}

Match GatherConfig::match_view() const {
  const GatherMatch& g = match;
  Match m;
  m.variant = std::string(ir::op_name(g.op));
  m.dtype = g.dtype;
  m.out_dtype = g.dtype;
  const bool scatter = g.op == ir::OpKind::kIndexCopy;
  m.roles[scatter ? "src" : "x"] = g.data;
  m.roles[scatter ? "state" : "out"] = g.dest;
  m.roles["idx"] = g.idx;
  const int64_t rank = static_cast<int64_t>(g.dims.size());
  m.facts["rank"] = rank;
  m.facts["axis"] = g.axis;
  for (int64_t j = 0; j < rank; ++j) m.facts["d" + std::to_string(j)] = g.dims[static_cast<size_t>(j)];
  m.facts["xdim"] = g.xdim;
  for (size_t j = 0; j < g.x_strides.size(); ++j) m.facts["xs" + std::to_string(j)] = g.x_strides[j];
  return m;
}

ParamSet GatherConfig::params_view() const {
  ParamSet p{{"vec", schedule.vec}, {"threads", schedule.threads}};
  if (schedule.fallback) p["fallback"] = 1;
  return p;
}

AC_REGISTER_FAMILY(gather, 170, GatherFamily)

}  // namespace agentcompile::plan
