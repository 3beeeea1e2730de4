// Gather family (src/kernels/copy.cuh): index_select, gather (torch.gather) and embedding regions
// whose table the embedding family does not take (not a weight), and index_copy (a scatter into a
// state: the region's side effect). Views as [outer, N, inner] around the indexed axis:
//   index_select / embedding: out[k, j, i] = x[k, idx[j], i]       (axis 0 may have T rows)
//   gather:                   out[c] = x[c with c[axis] = idx[c]]  (x read with its own strides)
//   index_copy:               state[k, idx[j], i] = src[k, j, i]
// An index outside the axis writes a poison value (NaN for floats) instead of faulting; index_copy
// skips it. Facts: rank, d<j> (the iterated shape: the output, or index_copy's source; d0 = 0 for
// T), axis, xdim (the indexed axis's length), xs<j> (gather: x's strides); roles x / src, idx, out /
// state.
#include <algorithm>
#include <sstream>

#include "plan/families.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

int64_t fact(const Match& m, const std::string& key) { return m.facts.at(key); }

int64_t inner_size(const Match& m) {
  int64_t inner = 1;
  for (int64_t j = fact(m, "axis") + 1; j < fact(m, "rank"); ++j) inner *= fact(m, "d" + std::to_string(j));
  return inner;
}

class GatherFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "gather"; }
  std::string template_file() const override { return "copy.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    if (ctx.size() != 1) return std::nullopt;
    const ir::Node& node = ctx.node(0);
    const ir::Function& f = *ctx.function;
    Match m;
    m.variant = std::string(ir::op_name(node.op));
    const ir::ValueId data = node.operands[0];
    const ir::TensorType& x = f.type(data);
    m.dtype = x.dtype;
    m.out_dtype = x.dtype;
    if (ir::is_quantized(x.dtype) || x.dtype == ir::DType::kI64 || !ir::shape_is_static(x.shape)) return std::nullopt;
    const ir::Shape* space = nullptr;
    int64_t axis = node.int_attr("axis");
    switch (node.op) {
      case OpKind::kEmbedding:
        if (ctx.slot_of(data).rfind("w", 0) == 0) return std::nullopt;  // the embedding family's
        m.variant = "index_select";
        axis = 0;
        [[fallthrough]];
      case OpKind::kIndexSelect:
      case OpKind::kGather:
        if (ctx.region->kind != analysis::RegionKind::kGather) return std::nullopt;
        space = &f.type(node.result).shape;
        m.roles["x"] = ctx.slot_of(data);
        m.roles["out"] = ctx.slot_of(node.result);
        break;
      case OpKind::kIndexCopy: {
        const auto& states = ctx.region->states;
        auto it = std::find(states.begin(), states.end(), node.string_attr("state"));
        if (it == states.end()) return std::nullopt;
        space = &x.shape;
        m.roles["src"] = ctx.slot_of(data);
        m.roles["state"] = "state" + std::to_string(it - states.begin());
        const ir::Shape& state = f.type(node.result).shape;
        if (!ir::shape_is_static(state)) return std::nullopt;
        if (axis < 0) axis += static_cast<int64_t>(state.size());
        m.facts["xdim"] = state[static_cast<size_t>(axis)].value;
        break;
      }
      default: return std::nullopt;
    }
    m.roles["idx"] = ctx.slot_of(node.operands[1]);
    for (const auto& [role, slot] : m.roles)
      if (slot.empty()) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(space->size());
    if (axis < 0) axis += rank;
    m.facts["rank"] = rank;
    m.facts["axis"] = axis;
    for (int64_t j = 0; j < rank; ++j) {
      const ir::Dim& d = (*space)[static_cast<size_t>(j)];
      // T rows only where they are the indexed axis of an index_select (an embedding of T ids).
      if (!d.is_static() && !(j == 0 && axis == 0 && d.symbol == ir::Symbol::kT && m.variant == "index_select")) return std::nullopt;
      m.facts["d" + std::to_string(j)] = d.is_static() ? d.value : 0;
    }
    if (node.op != OpKind::kIndexCopy) m.facts["xdim"] = x.shape[static_cast<size_t>(axis)].value;
    if (node.op == OpKind::kGather) {
      int64_t stride = 1;
      for (int64_t j = rank; j-- > 0;) {
        m.facts["xs" + std::to_string(j)] = stride;
        stride *= x.shape[static_cast<size_t>(j)].value;
      }
    }
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile&) const override {
    std::vector<Choice> out;
    // Rows of `inner` elements move together (index_select, index_copy); gather reads per element.
    int max_vec = m.variant == "gather" ? 1 : static_cast<int>(std::min<int64_t>(8, 16 / static_cast<int64_t>(ir::dtype_size(m.dtype))));
    while (max_vec > 1 && inner_size(m) % max_vec != 0) max_vec /= 2;
    for (int vec : {max_vec, max_vec / 2}) {
      if (vec < 2) continue;
      Choice c;
      c.params = {{"vec", vec}, {"threads", 256}};
      c.score = vec == max_vec ? 1.0 : 0.9;
      c.notes.push_back(std::to_string(vec) + " elements per thread, one index read per vector");
      out.push_back(std::move(c));
    }
    Choice fallback;
    fallback.params = {{"vec", 1}, {"threads", 256}, {"fallback", 1}};
    fallback.score = 0.01;
    fallback.notes = {"conservative fallback: one element per thread"};
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const Match& m, const ParamSet& params) const override {
    std::ostringstream name;
    name << (m.variant == "index_copy" ? "scatter_" : "gather_") << m.variant << "_" << dtype_tag(m.dtype) << "_a" << fact(m, "axis")
         << "_x" << fact(m, "xdim") << "_";
    for (int64_t j = 0; j < fact(m, "rank"); ++j) {
      const int64_t d = fact(m, "d" + std::to_string(j));
      name << (j ? "x" : "") << (d ? std::to_string(d) : "T");
    }
    name << "_v" << params.at("vec") << "_t" << params.at("threads");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& params) const override {
    int64_t elements = 1;
    for (int64_t j = 0; j < fact(m, "rank"); ++j) {
      const int64_t d = fact(m, "d" + std::to_string(j));
      elements *= d ? d : 1;
    }
    const bool per_token = fact(m, "d0") == 0;
    Launch launch;
    launch.kernel = kernel_name(m, params);
    launch.block_x = static_cast<int>(params.at("threads"));
    const int64_t vectors = elements / params.at("vec");
    launch.grid_x = per_token ? Extent{vectors, 0, params.at("threads")} : Extent{0, vectors, params.at("threads")};
    return {launch};
  }
};

}  // namespace

const TemplateFamily& gather_family() {
  static const GatherFamily family;
  return family;
}

}  // namespace agentcompile::plan
