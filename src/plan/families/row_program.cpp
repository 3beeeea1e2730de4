// Row programs (see row_program.h): analysis of a fusion region (or of a matmul region's epilogue)
// and the program's encoding in a Match.
#include "plan/families/row_program.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <map>

#include "analysis/regions.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

bool is_pointwise(OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kPointwise; }

bool is_plain_dtype(ir::DType dtype) { return ir::is_float(dtype) || dtype == ir::DType::kI32 || dtype == ir::DType::kBool; }

bool reduces(OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kReduction; }
bool scans(OpKind op) { return ir::op_info(op).op_class == ir::OpClass::kScan; }

// A reduction of i32 values to an i32 result that an int accumulator computes as the reference does.
bool integer_reduction(OpKind op, ir::DType input, ir::DType result) {
  const bool integer_op = op == OpKind::kReduceSum || op == OpKind::kReduceMax || op == OpKind::kReduceMin || op == OpKind::kReduceProd;
  return integer_op && input == ir::DType::kI32 && result == ir::DType::kI32;
}

// Element strides with which `shape` (row-major, contiguous) broadcasts into `space`, one per dim
// of `space`; nullopt when it does not broadcast (a dim that is neither equal nor a static 1, a
// higher rank, a symbolic dim that strides would depend on).
std::optional<std::vector<int64_t>> broadcast_strides(const ir::Shape& shape, const ir::Shape& space) {
  const size_t r = shape.size(), n = space.size();
  if (r > n) return std::nullopt;
  std::vector<int64_t> contiguous(r, 1);
  for (size_t j = r; j-- > 1;) {
    if (!shape[j].is_static()) return std::nullopt;
    contiguous[j - 1] = contiguous[j] * shape[j].value;
  }
  std::vector<int64_t> strides(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (i < n - r) continue;  // missing leading dim: broadcast
    const ir::Dim& d = shape[i - (n - r)];
    if (d == space[i]) {
      strides[i] = contiguous[i - (n - r)];
    } else if (!(d.is_static() && d.value == 1)) {
      return std::nullopt;
    }
  }
  return strides;
}

// A value read from outside the nodes analyzed: an interface slot (read through views: a broadcast
// on top, then reshapes), or a source computed where it is read (a one-value constant, an arange, a
// random_uniform).
struct Operand {
  RowProgram::LoadKind kind = RowProgram::LoadKind::kMemory;
  std::string slot;
  ir::TensorType type;  // the type it broadcasts from
  double value = 0, step = 0;
};

std::optional<Operand> external_operand(const RegionContext& ctx, ir::ValueId value) {
  const ir::Function& f = *ctx.function;
  Operand out;
  out.type = f.type(value);
  ir::ValueId cur = value;
  bool reshaped = false;
  while (true) {
    if (std::string slot = ctx.slot_of(cur); !slot.empty()) {
      out.slot = slot;
      out.type.dtype = f.type(cur).dtype;
      return out;
    }
    const int producer = f.value(cur).producer;
    if (producer < 0) return std::nullopt;
    const ir::Node& node = f.nodes[static_cast<size_t>(producer)];
    if (node.op == OpKind::kConstant) {
      if (!node.has_attr("value")) return std::nullopt;  // a dense constant: not inlined
      out.kind = RowProgram::LoadKind::kLiteral;
      out.value = node.float_attr("value");
      out.type.dtype = f.type(cur).dtype;
      return out;
    }
    if (node.op == OpKind::kArange) {
      out.kind = RowProgram::LoadKind::kArange;
      out.value = node.float_attr("start");
      out.step = node.float_attr("step", 1.0);
      out.type.dtype = f.type(cur).dtype;
      return out;
    }
    if (node.op == OpKind::kRandomUniform) {  // seeds are below 2^53: exact in a double
      out.kind = RowProgram::LoadKind::kRandom;
      out.value = static_cast<double>(node.int_attr("seed"));
      out.type.dtype = f.type(cur).dtype;
      return out;
    }
    if (node.op == OpKind::kBroadcast && !reshaped) {
      out.type = f.type(node.operands[0]);
    } else if (node.op == OpKind::kReshape || node.op == OpKind::kView) {
      reshaped = true;
    } else {
      return std::nullopt;  // a slice, or a broadcast under a reshape: not a strided read
    }
    cur = node.operands[0];
  }
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < v.size(); ++i) p *= v[i];
  return p;
}

// Walks nodes in order, building steps over a fixed iteration space.
class ProgramBuilder {
 public:
  ProgramBuilder(const RegionContext& ctx, RowProgram& p, const ir::Shape& space) : ctx_(ctx), p_(p), space_(space) {}

  // `pointwise_only`: no row op reads the space, so a vector of T (a captured module's batch of
  // scalars) can run as T rows of one column.
  bool set_space(bool pointwise_only) {
    if (space_.empty()) return true;  // a scalar: one row of one column
    if (pointwise_only && space_.size() == 1 && space_[0].symbol == ir::Symbol::kT) {
      rows_only_ = true;
      p_.cols = 1;
      p_.lead.push_back(0);
      return true;
    }
    if (!space_.back().is_static() || space_.back().value <= 0) return false;
    p_.cols = space_.back().value;
    for (size_t d = 0; d + 1 < space_.size(); ++d) {
      const ir::Dim& dim = space_[d];
      if (dim.is_static()) {
        if (dim.value <= 0) return false;
        p_.lead.push_back(dim.value);
      } else if (d == 0 && dim.symbol == ir::Symbol::kT) {
        p_.lead.push_back(0);
      } else {
        return false;
      }
    }
    return true;
  }

  // A value read from its own slot (plus `v.plus`): a first step computes it in the value's dtype.
  bool add_virtual(const VirtualLoad& v) {
    virtual_[v.value] = v;
    RowProgram::Step step;
    step.op = v.plus == ir::kNoValue ? OpKind::kCast : OpKind::kAdd;
    step.dtype = ctx_.function->type(v.value).dtype;
    auto product = load_ref(v.value);
    if (!product) return false;
    step.a = *product;
    if (v.plus != ir::kNoValue) {
      auto plus = load_ref(v.plus);
      if (!plus) return false;
      step.b = *plus;
    }
    step_of_value_[v.value] = static_cast<int>(p_.steps.size());
    p_.steps.push_back(step);
    return true;
  }

  // Adds node `node` as a step; `is_row` marks the row op. False when it does not fit.
  bool add(const ir::Node& node, bool is_row) {
    const ir::Function& f = *ctx_.function;
    RowProgram::Step step;
    step.op = node.op;
    step.dtype = f.type(node.result).dtype;
    if (node.operands.size() > 3 || !is_plain_dtype(step.dtype)) return false;
    int* slots[3] = {&step.a, &step.b, &step.c};
    for (size_t k = 0; k < node.operands.size(); ++k) {
      const ir::ValueId v = node.operands[k];
      if (auto it = step_of_value_.find(v); it != step_of_value_.end()) {
        *slots[k] = -2 - it->second;  // a step, numbered once the loads are all known
        const RowProgram::Step& source = p_.steps[static_cast<size_t>(it->second)];
        if (source.post || it->second == p_.row_step) step.post = true;
        continue;
      }
      auto ref = load_ref(v);
      if (!ref) return false;  // also: an intermediate read through a view
      *slots[k] = *ref;
    }
    const ir::Shape& result_shape = f.type(node.result).shape;
    if (is_row) {
      if (step.post || !(ir::is_float(ref_dtype(step.a)) || integer_reduction(node.op, ref_dtype(step.a), step.dtype))) return false;
      p_.row_step = static_cast<int>(p_.steps.size());
      if (node.op == OpKind::kRmsNorm || node.op == OpKind::kLayerNorm) p_.eps = static_cast<float>(node.float_attr("eps"));
    } else {
      if (!broadcast_strides(result_shape, space_)) return false;
      if (step.post && p_.row_step >= 0 && !p_.elementwise_row_op()) return false;  // nothing follows a reduction
    }
    switch (node.op) {
      case OpKind::kLeakyRelu: step.p0 = node.float_attr("slope"); break;
      case OpKind::kClamp:
        if (node.has_attr("lo")) step.p0 = node.float_attr("lo"), step.flags |= 1;
        if (node.has_attr("hi")) step.p1 = node.float_attr("hi"), step.flags |= 2;
        break;
      case OpKind::kGelu: step.flags = node.string_attr("approximate", "none") == "tanh" ? 1 : 0; break;
      default: break;
    }
    step_of_value_[node.result] = static_cast<int>(p_.steps.size());
    p_.steps.push_back(step);
    return true;
  }

  // Numbers step operands after the loads; adds the stores of `outputs`.
  bool finish(const std::vector<ir::ValueId>& outputs) {
    const int loads = static_cast<int>(p_.loads.size());
    for (auto& step : p_.steps)
      for (int* v : {&step.a, &step.b, &step.c})
        if (*v <= -2) *v = loads + (-2 - *v);
    const ir::Function& f = *ctx_.function;
    for (ir::ValueId out : outputs) {
      auto it = step_of_value_.find(out);
      if (it == step_of_value_.end()) return false;
      RowProgram::Store store;
      store.value = loads + it->second;
      store.slot = ctx_.slot_of(out);
      store.dtype = f.type(out).dtype;
      store.per_row = it->second == p_.row_step && !p_.elementwise_row_op();
      if (store.slot.rfind("out", 0) != 0) return false;
      if (!store.per_row && f.type(out).shape != space_) return false;  // outputs cover the whole space
      p_.stores.push_back(store);
    }
    return !p_.stores.empty();
  }

  // The dtype of an operand reference while steps are still numbered by -2 - index.
  ir::DType ref_dtype(int ref) const {
    return ref <= -2 ? p_.steps[static_cast<size_t>(-2 - ref)].dtype : p_.loads[static_cast<size_t>(ref)].dtype;
  }

 private:
  std::optional<int> load_ref(ir::ValueId value) {
    RowProgram::Load load;
    ir::Shape shape;
    if (auto it = virtual_.find(value); it != virtual_.end() && !step_of_value_.count(value)) {
      load.slot = it->second.slot;
      load.dtype = it->second.dtype;
      shape = ctx_.function->type(value).shape;
    } else {
      auto ext = external_operand(ctx_, value);
      if (!ext || !is_plain_dtype(ext->type.dtype)) return std::nullopt;
      load.kind = ext->kind;
      load.slot = ext->slot;
      load.dtype = ext->type.dtype;
      load.value = ext->value;
      load.step = ext->step;
      shape = ext->type.shape;
    }
    if (load.kind == RowProgram::LoadKind::kLiteral) {
      load.row_strides.assign(p_.lead.size(), 0);
      load.col_stride = 0;
    } else {
      auto strides = broadcast_strides(shape, space_);
      if (!strides) return std::nullopt;
      load.col_stride = space_.empty() || p_.cols == 1 ? 0 : strides->back();
      load.row_strides.assign(strides->begin(), strides->empty() || rows_only_ ? strides->end() : strides->end() - 1);
    }
    for (size_t i = 0; i < p_.loads.size(); ++i) {
      const auto& l = p_.loads[i];
      if (l.kind == load.kind && l.slot == load.slot && l.dtype == load.dtype && l.row_strides == load.row_strides &&
          l.col_stride == load.col_stride && l.value == load.value && l.step == load.step)
        return static_cast<int>(i);
    }
    p_.loads.push_back(load);
    return static_cast<int>(p_.loads.size()) - 1;
  }

  const RegionContext& ctx_;
  RowProgram& p_;
  const ir::Shape space_;
  bool rows_only_ = false;  // the space is [T]: T rows of one column
  std::map<ir::ValueId, int> step_of_value_;
  std::map<ir::ValueId, VirtualLoad> virtual_;
};

}  // namespace

ir::DType RowProgram::value_dtype(int value) const {
  return is_load(value) ? loads[static_cast<size_t>(value)].dtype : step_of(value).dtype;
}

bool RowProgram::integer_row_op() const {
  if (row_step < 0) return false;
  const Step& row = steps[static_cast<size_t>(row_step)];
  return integer_reduction(row.op, value_dtype(row.a), row.dtype);
}

bool RowProgram::elementwise_row_op() const {
  const OpKind op = row_op();
  return row_step >= 0 && !reduces(op);
}

int64_t RowProgram::rows_per_token() const {
  if (lead.empty() || lead[0] != 0) return 0;
  return product(lead, 1, lead.size());
}

int64_t RowProgram::rows_fixed() const {
  if (lead.empty()) return 1;
  return lead[0] == 0 ? 0 : product(lead, 0, lead.size());
}

int64_t RowProgram::typical_rows() const { return rows_per_token() > 0 ? rows_per_token() * 512 : rows_fixed(); }

int64_t RowProgram::reduced_length() const { return column_form() ? lead[static_cast<size_t>(reduce_lead)] : cols; }
int64_t RowProgram::inner_rows() const { return column_form() ? product(lead, static_cast<size_t>(reduce_lead) + 1, lead.size()) : 1; }

int64_t RowProgram::outer_per_token() const {
  if (!column_form() || lead[0] != 0) return 0;
  return product(lead, 1, static_cast<size_t>(reduce_lead));
}

int64_t RowProgram::outer_fixed() const {
  if (!column_form()) return 1;
  return lead[0] == 0 ? 0 : product(lead, 0, static_cast<size_t>(reduce_lead));
}

ir::DType RowProgram::dtype() const {
  if (row_step >= 0) return value_dtype(steps[static_cast<size_t>(row_step)].a);
  return stores.empty() ? ir::DType::kF32 : stores.front().dtype;
}

int RowProgram::max_vector() const {
  size_t narrowest = 4;
  for (const Load& l : loads)
    if (l.kind == LoadKind::kMemory && l.col_stride == 1) narrowest = std::min(narrowest, ir::dtype_size(l.dtype));
  for (const Store& s : stores)
    if (!s.per_row) narrowest = std::min(narrowest, ir::dtype_size(s.dtype));
  return std::min(8, static_cast<int>(16 / narrowest));
}

int RowProgram::pre_steps() const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const Step& s) { return !s.post; }));
}

std::string RowProgram::ops_tag() const {
  std::string tag;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i == 4) return tag + "_etc";
    if (!tag.empty()) tag += "_";
    tag += std::string(ir::op_name(steps[i].op));
  }
  return tag;
}

std::optional<RowProgram> analyze_row_program(const RegionContext& ctx) {
  const analysis::Region& region = *ctx.region;
  const ir::Function& f = *ctx.function;
  if (region.kind != analysis::RegionKind::kFusion || region.has_side_effect || region.nodes.empty()) return std::nullopt;
  int row_node = -1;
  for (size_t i = 0; i < ctx.size(); ++i) {
    const OpKind op = ctx.node(static_cast<int>(i)).op;
    if (is_pointwise(op)) continue;
    if (!analysis::is_row_op(op) || row_node >= 0) return std::nullopt;
    row_node = static_cast<int>(i);
  }

  // The iteration space: [lead..., cols]; the row op's axis.
  RowProgram p;
  ir::Shape space;
  if (row_node >= 0) {
    const ir::Node& row = ctx.node(row_node);
    space = f.type(row.operands[0]).shape;
    const int64_t rank = static_cast<int64_t>(space.size());
    if (rank == 0) return std::nullopt;
    int64_t axis = rank - 1;
    if (row.op != OpKind::kRmsNorm && row.op != OpKind::kLayerNorm) {
      axis = row.int_attr("axis", -1);
      if (axis < 0) axis += rank;
    }
    if (axis != rank - 1) {
      // The column form: reductions and scans over a leading axis of static length (not T).
      if (!reduces(row.op) && !scans(row.op)) return std::nullopt;
      if (!space[static_cast<size_t>(axis)].is_static()) return std::nullopt;
      p.reduce_lead = static_cast<int>(axis);
    }
    const ir::Shape& result = f.type(row.result).shape;
    if (reduces(row.op)) {
      ir::Shape dropped = space, kept = space;
      dropped.erase(dropped.begin() + axis);
      kept[static_cast<size_t>(axis)] = ir::Dim::of(1);
      if (result != dropped && result != kept) return std::nullopt;
    } else if (result != space) {
      return std::nullopt;
    }
  } else {
    if (region.outputs.empty()) return std::nullopt;
    space = f.type(region.outputs.front()).shape;
    for (ir::ValueId out : region.outputs)
      if (f.type(out).shape != space) return std::nullopt;
  }
  ProgramBuilder builder(ctx, p, space);
  if (!builder.set_space(row_node < 0)) return std::nullopt;
  for (size_t i = 0; i < ctx.size(); ++i)
    if (!builder.add(ctx.node(static_cast<int>(i)), static_cast<int>(i) == row_node)) return std::nullopt;
  if (!builder.finish(region.outputs)) return std::nullopt;
  if (row_node >= 0) {  // (operands are numbered once finished)
    const RowProgram::Step& row = p.steps[static_cast<size_t>(p.row_step)];
    const bool arg = row.op == OpKind::kArgmax || row.op == OpKind::kArgmin;
    if (arg ? row.dtype != ir::DType::kI32 : !(ir::is_float(row.dtype) || p.integer_row_op())) return std::nullopt;
  }
  return p;
}

std::optional<RowProgram> analyze_pointwise_tail(const RegionContext& ctx, size_t first, const ir::Shape& space,
                                                 const std::vector<VirtualLoad>& virtual_loads) {
  RowProgram p;
  ProgramBuilder builder(ctx, p, space);
  if (!builder.set_space(true)) return std::nullopt;
  for (const VirtualLoad& v : virtual_loads)
    if (!builder.add_virtual(v)) return std::nullopt;
  for (size_t i = first; i < ctx.size(); ++i) {
    const ir::Node& node = ctx.node(static_cast<int>(i));
    if (!is_pointwise(node.op) || !builder.add(node, false)) return std::nullopt;
  }
  if (!builder.finish(ctx.region->outputs)) return std::nullopt;
  return p;
}

namespace {

int64_t bits(double v) { return std::bit_cast<int64_t>(v); }
double from_bits(int64_t v) { return std::bit_cast<double>(v); }

int64_t fact_or(const std::map<std::string, int64_t>& facts, const std::string& key, int64_t fallback) {
  auto it = facts.find(key);
  return it == facts.end() ? fallback : it->second;
}

}  // namespace

// Facts that only the newer ops need are written when they differ from their defaults, so programs
// of the original op set keep their encoding (and their kernels' names).
void encode_row_program(const RowProgram& p, Match& m) {
  auto& f = m.facts;
  f["cols"] = p.cols;
  f["lead_n"] = static_cast<int64_t>(p.lead.size());
  for (size_t d = 0; d < p.lead.size(); ++d) f["lead" + std::to_string(d)] = p.lead[d];
  f["rows_per_token"] = p.rows_per_token();
  f["rows_fixed"] = p.rows_fixed();
  if (p.column_form()) {
    f["reduce_lead"] = p.reduce_lead;
    f["outer_per_token"] = p.outer_per_token();
    f["outer_fixed"] = p.outer_fixed();
  }
  f["loads"] = static_cast<int64_t>(p.loads.size());
  for (size_t i = 0; i < p.loads.size(); ++i) {
    const RowProgram::Load& load = p.loads[i];
    const std::string k = "load" + std::to_string(i);
    if (load.kind == RowProgram::LoadKind::kMemory) m.roles[k] = load.slot;
    if (load.kind != RowProgram::LoadKind::kMemory) f[k + ".kind"] = static_cast<int64_t>(load.kind);
    if (load.value != 0) f[k + ".value"] = bits(load.value);
    if (load.step != 0) f[k + ".step"] = bits(load.step);
    f[k + ".dtype"] = static_cast<int64_t>(load.dtype);
    f[k + ".cs"] = load.col_stride;
    for (size_t d = 0; d < load.row_strides.size(); ++d) f[k + ".rs" + std::to_string(d)] = load.row_strides[d];
  }
  f["steps"] = static_cast<int64_t>(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const RowProgram::Step& step = p.steps[s];
    const std::string k = "step" + std::to_string(s);
    f[k + ".op"] = static_cast<int64_t>(step.op);
    f[k + ".a"] = step.a;
    f[k + ".b"] = step.b;
    if (step.c != -1) f[k + ".c"] = step.c;
    if (step.p0 != 0) f[k + ".p0"] = bits(step.p0);
    if (step.p1 != 0) f[k + ".p1"] = bits(step.p1);
    if (step.flags != 0) f[k + ".flags"] = step.flags;
    f[k + ".dtype"] = static_cast<int64_t>(step.dtype);
    f[k + ".post"] = step.post;
  }
  f["stores"] = static_cast<int64_t>(p.stores.size());
  for (size_t j = 0; j < p.stores.size(); ++j) {
    const std::string k = "store" + std::to_string(j);
    m.roles[k] = p.stores[j].slot;
    f[k + ".value"] = p.stores[j].value;
    f[k + ".dtype"] = static_cast<int64_t>(p.stores[j].dtype);
    f[k + ".per_row"] = p.stores[j].per_row;
  }
  f["row_step"] = p.row_step;
  f["eps_bits"] = std::bit_cast<uint32_t>(p.eps);
}

RowProgram decode_row_program(const Match& m) {
  const auto& f = m.facts;
  RowProgram p;
  p.cols = f.at("cols");
  for (int64_t d = 0; d < f.at("lead_n"); ++d) p.lead.push_back(f.at("lead" + std::to_string(d)));
  p.reduce_lead = static_cast<int>(fact_or(f, "reduce_lead", -1));
  for (int64_t i = 0; i < f.at("loads"); ++i) {
    const std::string k = "load" + std::to_string(i);
    RowProgram::Load load;
    load.kind = static_cast<RowProgram::LoadKind>(fact_or(f, k + ".kind", 0));
    if (load.kind == RowProgram::LoadKind::kMemory) load.slot = m.roles.at(k);
    load.value = from_bits(fact_or(f, k + ".value", 0));
    load.step = from_bits(fact_or(f, k + ".step", 0));
    load.dtype = static_cast<ir::DType>(f.at(k + ".dtype"));
    load.col_stride = f.at(k + ".cs");
    for (size_t d = 0; d < p.lead.size(); ++d) load.row_strides.push_back(f.at(k + ".rs" + std::to_string(d)));
    p.loads.push_back(load);
  }
  for (int64_t s = 0; s < f.at("steps"); ++s) {
    const std::string k = "step" + std::to_string(s);
    RowProgram::Step step;
    step.op = static_cast<ir::OpKind>(f.at(k + ".op"));
    step.a = static_cast<int>(f.at(k + ".a"));
    step.b = static_cast<int>(f.at(k + ".b"));
    step.c = static_cast<int>(fact_or(f, k + ".c", -1));
    step.p0 = from_bits(fact_or(f, k + ".p0", 0));
    step.p1 = from_bits(fact_or(f, k + ".p1", 0));
    step.flags = static_cast<int>(fact_or(f, k + ".flags", 0));
    step.dtype = static_cast<ir::DType>(f.at(k + ".dtype"));
    step.post = f.at(k + ".post") != 0;
    p.steps.push_back(step);
  }
  for (int64_t j = 0; j < f.at("stores"); ++j) {
    const std::string k = "store" + std::to_string(j);
    RowProgram::Store store;
    store.slot = m.roles.at(k);
    store.value = static_cast<int>(f.at(k + ".value"));
    store.dtype = static_cast<ir::DType>(f.at(k + ".dtype"));
    store.per_row = f.at(k + ".per_row") != 0;
    p.stores.push_back(store);
  }
  p.row_step = static_cast<int>(f.at("row_step"));
  p.eps = std::bit_cast<float>(static_cast<uint32_t>(f.at("eps_bits")));
  return p;
}

std::string row_program_digest(const Match& m) {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&](const std::string& text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ull;
    }
  };
  for (const auto& [key, value] : m.facts) mix(key + "=" + std::to_string(value) + ";");
  for (const auto& [key, value] : m.roles) mix(key + "=" + value + ";");
  char buffer[9];
  std::snprintf(buffer, sizeof(buffer), "%08x", static_cast<unsigned>(hash ^ (hash >> 32)));
  return buffer;
}

Match row_program_match(const RowProgram& program, const std::string& variant) {
  Match m;
  m.variant = variant;
  m.dtype = program.dtype();
  m.out_dtype = program.stores.front().dtype;
  encode_row_program(program, m);
  return m;
}

}  // namespace agentcompile::plan
