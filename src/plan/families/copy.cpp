// Copy family (src/kernels/copy.cuh): copy regions of one layout op that moves data, transpose,
// concat, flip or a slice of an inner axis, over static shapes or shapes whose first dim is T in the
// output and every operand (an op that keeps that dim in place: its strides stay static). Each output element reads one
// source element at an affine offset: per operand ("piece") a base and a stride per output dim
// (negative for a flip), and for a concat the range of the concat axis the piece covers; a one-value
// constant operand is written, not read. The record and its serialized view are in copy.h;
// codegen/renderers/copy.cpp writes the source.
//
// Forms: "elementwise", one vector of VEC output elements per thread (VEC > 1 where every piece
// reads its innermost axis contiguously and aligned); "tiled", a transpose that moves the innermost
// axis through shared-memory tiles (reads and writes both coalesced).
#include "plan/families/copy.h"

#include <algorithm>
#include <bit>
#include <sstream>

#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

std::vector<int64_t> contiguous_strides(const ir::Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t j = shape.size(); j-- > 1;) s[j - 1] = s[j] * shape[j].value;
  return s;
}

// A static shape, or one whose only symbolic dim is a leading T.
bool t_rows_only(const ir::Shape& shape) {
  for (size_t j = 0; j < shape.size(); ++j)
    if (!shape[j].is_static() && (j != 0 || shape[j].symbol != ir::Symbol::kT)) return false;
  return true;
}

// Output elements: per token (d0 is T) or in all.
int64_t elements_of(const CopyMatch& m) {
  int64_t elements = 1;
  for (int64_t d : m.dims) elements *= d ? d : 1;
  return elements;
}

// The value of a one-value constant read through views, if `value` is one.
std::optional<double> splat_value(const ir::Function& f, ir::ValueId value) {
  while (true) {
    const int producer = f.value(value).producer;
    if (producer < 0) return std::nullopt;
    const ir::Node& node = f.nodes[static_cast<size_t>(producer)];
    if (node.op == OpKind::kConstant) return node.has_attr("value") ? std::optional<double>(node.float_attr("value")) : std::nullopt;
    if (!analysis::is_view_node(node)) return std::nullopt;
    value = node.operands[0];
  }
}

// The widest vector every piece can move in one aligned access.
int max_copy_vector(const CopyMatch& m) {
  const int64_t rank = static_cast<int64_t>(m.dims.size());
  const int64_t last = m.dims.back();
  int vec = static_cast<int>(std::min<int64_t>(8, 16 / static_cast<int64_t>(ir::dtype_size(m.dtype))));
  for (; vec > 1; vec /= 2) {
    bool ok = last % vec == 0;
    for (size_t i = 0; i < m.pieces.size() && ok; ++i) {
      const CopyPiece& piece = m.pieces[i];
      if (m.axis == rank - 1) ok = piece.lo % vec == 0;
      if (piece.fill) continue;
      ok = ok && piece.strides.back() == 1 && piece.base % vec == 0;
      for (int64_t j = 0; j + 1 < rank && ok; ++j) ok = piece.strides[static_cast<size_t>(j)] % vec == 0;
    }
    if (ok) return vec;
  }
  return 1;
}

}  // namespace

// The output dim that reads the source's innermost axis (stride 1), when it is not the output's
// innermost: a transpose that moves the innermost axis. -1 otherwise.
int64_t copy_tiled_dim(const CopyMatch& m) {
  const int64_t rank = static_cast<int64_t>(m.dims.size());
  if (m.pieces.size() != 1 || m.pieces[0].fill || rank < 2 || m.pieces[0].strides.back() == 1) return -1;
  for (int64_t j = 0; j + 1 < rank; ++j)
    if (m.pieces[0].strides[static_cast<size_t>(j)] == 1) return j;
  return -1;
}

namespace {

class CopyFamily final : public TypedFamily<CopyMatch, CopyConfig> {
 public:
  std::string name() const override { return "copy"; }
  std::string template_file() const override { return "copy.cuh"; }

  std::optional<CopyMatch> match(const RegionContext& ctx) const override {
    if (ctx.region->kind != analysis::RegionKind::kCopy || ctx.size() != 1) return std::nullopt;
    const ir::Node& node = ctx.node(0);
    const ir::Function& f = *ctx.function;
    const ir::TensorType& out = f.type(node.result);
    if (!t_rows_only(out.shape) || out.shape.empty() || ir::is_quantized(out.dtype) || out.dtype == ir::DType::kI64)
      return std::nullopt;
    const bool per_token = !out.shape[0].is_static();
    CopyMatch m;
    m.op = node.op;
    m.dtype = out.dtype;
    m.out = ctx.slot_of(node.result);
    if (m.out.rfind("out", 0) != 0) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(out.shape.size());
    for (int64_t j = 0; j < rank; ++j) m.dims.push_back(out.shape[static_cast<size_t>(j)].value);  // T: 0
    auto axis_of = [&](int64_t axis) { return axis < 0 ? axis + rank : axis; };
    // Pieces: operand slot, base, strides per output dim, range on the concat axis.
    auto add_piece = [&](ir::ValueId operand, int64_t base, const std::vector<int64_t>& strides, int64_t lo, int64_t hi) {
      CopyPiece& piece = m.pieces.emplace_back();
      piece.lo = lo;
      piece.hi = hi;
      if (auto value = splat_value(f, operand)) {  // a constant piece (the zeros of an exclusive scan) is a fill
        piece.fill = *value;
        return true;
      }
      piece.slot = ctx.slot_of(operand);
      piece.base = base;
      piece.strides = strides;
      return !piece.slot.empty() && piece.slot.rfind("out", 0) != 0;
    };
    for (ir::ValueId operand : node.operands) {
      const ir::Shape& shape = f.type(operand).shape;
      if (!t_rows_only(shape) || shape.empty() || shape[0].is_static() != !per_token) return std::nullopt;
    }
    // T rows stay the outermost dim: a transpose keeps dim 0 in place, the other ops work off axis 0.
    if (per_token && (node.op == OpKind::kTranspose ? node.dims_attr("perm")[0].value != 0 : axis_of(node.int_attr("axis")) == 0))
      return std::nullopt;
    const std::vector<int64_t> in_strides = contiguous_strides(f.type(node.operands[0]).shape);
    bool ok = true;
    switch (node.op) {
      case OpKind::kTranspose: {
        const auto perm = node.dims_attr("perm");
        std::vector<int64_t> strides;
        for (const ir::Dim& p : perm) strides.push_back(in_strides[static_cast<size_t>(p.value)]);
        ok = add_piece(node.operands[0], 0, strides, 0, 0);
        break;
      }
      case OpKind::kFlip: {
        const int64_t axis = axis_of(node.int_attr("axis"));
        std::vector<int64_t> strides = in_strides;
        const int64_t base = (out.shape[static_cast<size_t>(axis)].value - 1) * strides[static_cast<size_t>(axis)];
        strides[static_cast<size_t>(axis)] = -strides[static_cast<size_t>(axis)];
        ok = add_piece(node.operands[0], base, strides, 0, 0);
        break;
      }
      case OpKind::kSlice: {
        const int64_t axis = axis_of(node.int_attr("axis"));
        const int64_t dim = f.type(node.operands[0]).shape[static_cast<size_t>(axis)].value;
        int64_t start = node.int_attr("start");
        if (start < 0) start += dim;
        ok = add_piece(node.operands[0], start * in_strides[static_cast<size_t>(axis)], in_strides, 0, 0);
        break;
      }
      case OpKind::kConcat: {
        const int64_t axis = axis_of(node.int_attr("axis"));
        m.axis = axis;
        int64_t lo = 0;
        for (ir::ValueId operand : node.operands) {
          const int64_t width = f.type(operand).shape[static_cast<size_t>(axis)].value;
          ok = ok && add_piece(operand, 0, contiguous_strides(f.type(operand).shape), lo, lo + width);
          lo += width;
        }
        if (m.pieces.size() > 8) return std::nullopt;  // a RegionArgs holds 8 inputs
        break;
      }
      default: return std::nullopt;
    }
    if (!ok) return std::nullopt;
    return m;
  }

  std::vector<Choice> param_space(const CopyMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int max_vec = max_copy_vector(m);
    const bool tiled = copy_tiled_dim(m) >= 0;
    if (tiled) {
      Choice c{CopyConfig(m, CopySchedule{true, 1, 256, false})};
      c.score = 1.0;
      c.form = "tiled";
      c.notes.push_back("transpose of the innermost axis through 32x33 shared-memory tiles: coalesced reads and writes");
      out.push_back(std::move(c));
    }
    for (int vec : {max_vec, max_vec / 2})
      for (int threads : {128, 256, 512}) {
        if (vec < 1 || threads > device.max_threads_per_block || (vec == 1 && threads == 256)) continue;
        Choice c{CopyConfig(m, CopySchedule{false, vec, threads, false})};
        c.score = (vec == max_vec ? 0.9 : 0.8) * (threads == 256 ? 1.0 : 0.98) * (tiled ? 0.5 : 1.0);
        c.form = "elementwise";
        c.notes.push_back(std::to_string(vec) + " element(s) per thread" + (tiled ? "; strided reads (a transpose)" : ""));
        out.push_back(std::move(c));
      }
    Choice fallback{CopyConfig(m, CopySchedule{false, 1, 256, true})};
    fallback.score = 0.01;
    fallback.notes = {"conservative fallback: one element per thread"};
    out.push_back(std::move(fallback));
    return out;
  }

  std::string kernel_name(const CopyConfig& config) const override {
    const CopyMatch& m = config.match;
    std::ostringstream name;
    name << "copy_" << ir::op_name(m.op) << "_" << dtype_tag(m.dtype) << "_";
    for (size_t j = 0; j < m.dims.size(); ++j) name << (j ? "x" : "") << (m.dims[j] ? std::to_string(m.dims[j]) : "T");
    name << "_" << row_program_digest(config.match_view());
    if (config.schedule.tiled)
      name << "_tiled";
    else
      name << "_v" << config.schedule.vec << "_t" << config.schedule.threads;
    return name.str();
  }

  std::vector<Launch> launches(const CopyConfig& config) const override {
    const CopyMatch& m = config.match;
    const CopySchedule& s = config.schedule;
    const int64_t elements = elements_of(m);
    const bool per_token = m.dims[0] == 0;
    auto grid = [&](int64_t count, int64_t divisor) { return per_token ? Extent{count, 0, divisor} : Extent{0, count, divisor}; };
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.block_x = static_cast<int>(s.threads);
    if (s.tiled) {
      const int64_t p = copy_tiled_dim(m);
      const int64_t P = m.dims[static_cast<size_t>(p)], Q = m.dims.back();
      const int64_t batch = elements / (P * Q);
      launch.grid_x = grid(batch * ((P + 31) / 32) * ((Q + 31) / 32), 1);
    } else {
      launch.grid_x = grid(elements / s.vec, s.threads);
    }
    return {launch};
  }
};

}  // namespace

Match CopyConfig::match_view() const {
  Match m;
  m.variant = std::string(ir::op_name(match.op));
  m.dtype = match.dtype;
  m.out_dtype = match.dtype;
  m.roles["out"] = match.out;
  const int64_t rank = static_cast<int64_t>(match.dims.size());
  m.facts["rank"] = rank;
  for (int64_t j = 0; j < rank; ++j) m.facts["d" + std::to_string(j)] = match.dims[static_cast<size_t>(j)];
  m.facts["axis"] = match.axis;
  m.facts["pieces"] = static_cast<int64_t>(match.pieces.size());
  for (size_t p = 0; p < match.pieces.size(); ++p) {
    const CopyPiece& piece = match.pieces[p];
    const std::string i = std::to_string(p);
    m.facts["lo" + i] = piece.lo;
    m.facts["hi" + i] = piece.hi;
    if (piece.fill) {
      m.facts["fill" + i] = std::bit_cast<int64_t>(*piece.fill);
      continue;
    }
    m.roles["src" + i] = piece.slot;
    m.facts["base" + i] = piece.base;
    for (int64_t j = 0; j < rank; ++j) m.facts["s" + i + "." + std::to_string(j)] = piece.strides[static_cast<size_t>(j)];
  }
  return m;
}

ParamSet CopyConfig::params_view() const {
  if (schedule.tiled) return {{"tiled", 1}, {"threads", schedule.threads}};
  ParamSet p{{"vec", schedule.vec}, {"threads", schedule.threads}};
  if (schedule.fallback) p["fallback"] = 1;
  return p;
}

AC_REGISTER_FAMILY(copy, 160, CopyFamily)

}  // namespace agentcompile::plan
