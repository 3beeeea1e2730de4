// Row programs (see row_program.h): analysis of a fusion region, its encoding in a Match, and the
// row geometry the row families share.
#include "plan/families/row_program.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "analysis/regions.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

bool is_pointwise(OpKind op) {
  switch (op) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kSilu:
    case OpKind::kExp:
    case OpKind::kNeg:
    case OpKind::kCast: return true;
    default: return false;
  }
}

bool is_row_op(OpKind op) {
  switch (op) {
    case OpKind::kRmsNorm:
    case OpKind::kSoftmax:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMean:
    case OpKind::kArgmax: return true;
    default: return false;
  }
}

bool is_float_dtype(ir::DType dtype) {
  return dtype == ir::DType::kF16 || dtype == ir::DType::kBF16 || dtype == ir::DType::kF32;
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

// A value read from outside the region: its interface slot and the type it broadcasts from.
// Weights may be read through views: broadcasts (outermost) then reshapes of the weight itself.
std::optional<std::pair<std::string, ir::TensorType>> external_operand(const RegionContext& ctx, ir::ValueId value) {
  const ir::Function& f = *ctx.function;
  if (std::string slot = ctx.slot_of(value); !slot.empty()) return std::pair{slot, f.type(value)};
  ir::TensorType type = f.type(value);
  ir::ValueId cur = value;
  bool reshaped = false;
  while (true) {
    const int producer = f.value(cur).producer;
    if (producer < 0) return std::nullopt;
    const ir::Node& node = f.nodes[static_cast<size_t>(producer)];
    if (node.op == OpKind::kWeight) break;
    if (node.op == OpKind::kBroadcast && !reshaped) {
      type = f.type(node.operands[0]);
    } else if (node.op == OpKind::kReshape || node.op == OpKind::kView) {
      reshaped = true;
    } else {
      return std::nullopt;  // a slice of a weight, or a broadcast under a reshape
    }
    cur = node.operands[0];
  }
  std::string slot = ctx.slot_of(cur);
  if (slot.empty()) return std::nullopt;
  return std::pair{slot, type};
}

int64_t product(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

}  // namespace

int64_t RowProgram::rows_per_token() const {
  if (lead.empty() || lead[0] != 0) return 0;
  return product(lead, 1);
}

int64_t RowProgram::rows_fixed() const {
  if (lead.empty()) return 1;
  return lead[0] == 0 ? 0 : product(lead, 0);
}

int64_t RowProgram::typical_rows() const { return rows_per_token() > 0 ? rows_per_token() * 512 : rows_fixed(); }

ir::DType RowProgram::dtype() const {
  if (row_step >= 0) {
    const int x = steps[static_cast<size_t>(row_step)].a;
    return is_load(x) ? loads[static_cast<size_t>(x)].dtype : step_of(x).dtype;
  }
  return stores.empty() ? ir::DType::kF32 : stores.front().dtype;
}

int RowProgram::max_vector() const {
  size_t narrowest = 4;
  for (const Load& l : loads)
    if (l.col_stride == 1) narrowest = std::min(narrowest, ir::dtype_size(l.dtype));
  for (const Store& s : stores)
    if (!s.per_row) narrowest = std::min(narrowest, ir::dtype_size(s.dtype));
  return static_cast<int>(16 / narrowest);
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
    if (!is_row_op(op) || row_node >= 0) return std::nullopt;
    row_node = static_cast<int>(i);
  }

  // The iteration space: [lead..., cols].
  ir::Shape space;
  if (row_node >= 0) {
    const ir::Node& row = ctx.node(row_node);
    space = f.type(row.operands[0]).shape;
    const int64_t rank = static_cast<int64_t>(space.size());
    if (rank == 0) return std::nullopt;
    if (row.op != OpKind::kRmsNorm) {
      int64_t axis = row.int_attr("axis", -1);
      if (axis < 0) axis += rank;
      if (axis != rank - 1) return std::nullopt;  // only the last axis is a row
    }
  } else {
    if (region.outputs.empty()) return std::nullopt;
    space = f.type(region.outputs.front()).shape;
    for (ir::ValueId out : region.outputs)
      if (f.type(out).shape != space) return std::nullopt;
  }
  RowProgram p;
  if (!space.empty()) {
    if (!space.back().is_static() || space.back().value <= 0) return std::nullopt;
    p.cols = space.back().value;
    for (size_t d = 0; d + 1 < space.size(); ++d) {
      const ir::Dim& dim = space[d];
      if (dim.is_static()) {
        if (dim.value <= 0) return std::nullopt;
        p.lead.push_back(dim.value);
      } else if (d == 0 && dim.symbol == ir::Symbol::kT) {
        p.lead.push_back(0);
      } else {
        return std::nullopt;
      }
    }
  }
  const ir::Shape row_shape(space.begin(), space.empty() ? space.end() : space.end() - 1);

  // Walk the nodes. Step operands are kept as (is_load, index) until the loads are all known.
  struct Ref {
    bool load;
    int index;
  };
  std::map<ir::ValueId, int> step_of_value;
  std::vector<std::pair<Ref, Ref>> operands;
  auto load_ref = [&](ir::ValueId value) -> std::optional<Ref> {
    auto ext = external_operand(ctx, value);
    if (!ext || !is_float_dtype(ext->second.dtype)) return std::nullopt;
    auto strides = broadcast_strides(ext->second.shape, space);
    if (!strides) return std::nullopt;
    RowProgram::Load load;
    load.slot = ext->first;
    load.dtype = ext->second.dtype;
    load.col_stride = space.empty() ? 0 : strides->back();
    if (p.cols == 1) load.col_stride = 0;
    load.row_strides.assign(strides->begin(), strides->empty() ? strides->end() : strides->end() - 1);
    for (size_t i = 0; i < p.loads.size(); ++i) {
      const auto& l = p.loads[i];
      if (l.slot == load.slot && l.dtype == load.dtype && l.row_strides == load.row_strides && l.col_stride == load.col_stride)
        return Ref{true, static_cast<int>(i)};
    }
    p.loads.push_back(load);
    return Ref{true, static_cast<int>(p.loads.size()) - 1};
  };
  for (size_t i = 0; i < ctx.size(); ++i) {
    const ir::Node& node = ctx.node(static_cast<int>(i));
    RowProgram::Step step;
    step.op = node.op;
    step.dtype = f.type(node.result).dtype;
    Ref refs[2] = {{false, -1}, {false, -1}};
    if (node.operands.size() > 2) return std::nullopt;
    for (size_t k = 0; k < node.operands.size(); ++k) {
      const ir::ValueId v = node.operands[k];
      if (auto it = step_of_value.find(v); it != step_of_value.end()) {
        refs[k] = Ref{false, it->second};
        const RowProgram::Step& source = p.steps[static_cast<size_t>(it->second)];
        if (source.post || it->second == p.row_step) step.post = true;
        continue;
      }
      auto ref = load_ref(v);
      if (!ref) return std::nullopt;  // also: an intermediate read through a view
      refs[k] = *ref;
    }
    const bool is_row = static_cast<int>(i) == row_node;
    const ir::Shape& result_shape = f.type(node.result).shape;
    if (is_row) {
      if (step.post) return std::nullopt;  // cannot happen for a single row op; kept as a guard
      const bool reduces = node.op != OpKind::kRmsNorm && node.op != OpKind::kSoftmax;
      if (reduces) {
        ir::Shape keep = row_shape;
        keep.push_back(ir::Dim::of(1));
        if (result_shape != row_shape && result_shape != keep) return std::nullopt;
        if (node.op == OpKind::kArgmax ? step.dtype != ir::DType::kI32 : !is_float_dtype(step.dtype)) return std::nullopt;
      } else if (!is_float_dtype(step.dtype)) {
        return std::nullopt;
      }
      if (node.op == OpKind::kRmsNorm) p.eps = static_cast<float>(node.float_attr("eps"));
      p.row_step = static_cast<int>(p.steps.size());
    } else {
      if (!is_float_dtype(step.dtype) || !broadcast_strides(result_shape, space)) return std::nullopt;
      if (step.post && p.row_step >= 0 && p.steps[static_cast<size_t>(p.row_step)].op != OpKind::kRmsNorm &&
          p.steps[static_cast<size_t>(p.row_step)].op != OpKind::kSoftmax)
        return std::nullopt;  // nothing follows a reduction inside the region
    }
    step_of_value[node.result] = static_cast<int>(p.steps.size());
    operands.push_back({refs[0], refs[1]});
    p.steps.push_back(step);
  }
  const int loads = static_cast<int>(p.loads.size());
  auto value = [&](Ref r) { return r.index < 0 ? -1 : r.load ? r.index : loads + r.index; };
  for (size_t s = 0; s < p.steps.size(); ++s) {
    p.steps[s].a = value(operands[s].first);
    p.steps[s].b = value(operands[s].second);
  }

  for (ir::ValueId out : region.outputs) {
    auto it = step_of_value.find(out);
    if (it == step_of_value.end()) return std::nullopt;
    RowProgram::Store store;
    store.value = loads + it->second;
    store.slot = ctx.slot_of(out);
    store.dtype = f.type(out).dtype;
    store.per_row = it->second == p.row_step && p.row_op() != OpKind::kRmsNorm && p.row_op() != OpKind::kSoftmax;
    if (store.slot.rfind("out", 0) != 0) return std::nullopt;
    if (!store.per_row && f.type(out).shape != space) return std::nullopt;  // outputs cover the whole space
    p.stores.push_back(store);
  }
  return p;
}

void encode_row_program(const RowProgram& p, Match& m) {
  auto& f = m.facts;
  f["cols"] = p.cols;
  f["lead_n"] = static_cast<int64_t>(p.lead.size());
  for (size_t d = 0; d < p.lead.size(); ++d) f["lead" + std::to_string(d)] = p.lead[d];
  f["rows_per_token"] = p.rows_per_token();
  f["rows_fixed"] = p.rows_fixed();
  f["loads"] = static_cast<int64_t>(p.loads.size());
  for (size_t i = 0; i < p.loads.size(); ++i) {
    const std::string k = "load" + std::to_string(i);
    m.roles[k] = p.loads[i].slot;
    f[k + ".dtype"] = static_cast<int64_t>(p.loads[i].dtype);
    f[k + ".cs"] = p.loads[i].col_stride;
    for (size_t d = 0; d < p.loads[i].row_strides.size(); ++d) f[k + ".rs" + std::to_string(d)] = p.loads[i].row_strides[d];
  }
  f["steps"] = static_cast<int64_t>(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const std::string k = "step" + std::to_string(s);
    f[k + ".op"] = static_cast<int64_t>(p.steps[s].op);
    f[k + ".a"] = p.steps[s].a;
    f[k + ".b"] = p.steps[s].b;
    f[k + ".dtype"] = static_cast<int64_t>(p.steps[s].dtype);
    f[k + ".post"] = p.steps[s].post;
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
  uint32_t bits = 0;
  std::memcpy(&bits, &p.eps, sizeof(bits));
  f["eps_bits"] = bits;
}

RowProgram decode_row_program(const Match& m) {
  const auto& f = m.facts;
  RowProgram p;
  p.cols = f.at("cols");
  for (int64_t d = 0; d < f.at("lead_n"); ++d) p.lead.push_back(f.at("lead" + std::to_string(d)));
  for (int64_t i = 0; i < f.at("loads"); ++i) {
    const std::string k = "load" + std::to_string(i);
    RowProgram::Load load;
    load.slot = m.roles.at(k);
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
  const uint32_t bits = static_cast<uint32_t>(f.at("eps_bits"));
  std::memcpy(&p.eps, &bits, sizeof(bits));
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

std::vector<RowGeometryChoice> row_geometries(int64_t cols, int64_t typical_rows, const std::vector<int>& vecs,
                                              int max_elems, const DeviceProfile& device) {
  std::vector<RowGeometryChoice> out;
  const int max_threads = std::min(1024, device.max_threads_per_block);
  for (int vec : vecs) {
    if (vec < 1 || cols % vec != 0) continue;
    for (int tpr = 1; tpr <= max_threads; tpr *= 2) {
      if (static_cast<int64_t>(tpr) * vec > cols) break;  // a thread without a vector to move
      const int64_t step = static_cast<int64_t>(tpr) * vec;
      const int chunks = static_cast<int>((cols + step - 1) / step);
      if (chunks * vec > max_elems) continue;
      for (int rows = 1; rows <= 32; rows *= 2) {
        const int threads = tpr * rows;
        if (threads % 32 != 0) continue;
        if (threads > max_threads) break;
        if (rows > 1 && rows > typical_rows && (rows / 2) * tpr >= 32) break;  // rows the grid never fills
        if (threads > 512 && rows > 1) break;
        out.push_back(RowGeometryChoice{tpr, vec, rows, chunks});
      }
    }
  }
  return out;
}

double row_geometry_score(const RowGeometryChoice& g, int max_vec, int64_t typical_rows, const DeviceProfile& device,
                          std::vector<std::string>* notes) {
  const int64_t blocks = (typical_rows + g.rows - 1) / g.rows;
  const int threads = g.tpr * g.rows;
  const bool few_rows = typical_rows < device.multiprocessors;
  // Full 16-byte accesses move the most bytes per instruction.
  const double vec_pref = g.vec >= max_vec ? 1.0 : g.vec * 2 >= max_vec ? 0.85 : 0.6;
  // With few rows the latency is a thread's serial share of one row: one chunk is best. With many
  // rows a few chunks per thread put more bytes in flight at no cost.
  const double chunk_pref = few_rows ? 1.0 / (1.0 + 0.15 * (g.chunks - 1))
                                     : g.chunks <= 4 ? 1.0 - 0.02 * (g.chunks - 1) : 0.9 - 0.01 * g.chunks;
  // A row wider than a warp pays a shared-memory round and two barriers per reduction.
  const double reduce_pref = g.tpr <= 32 ? 1.0 : g.tpr <= 256 ? 0.97 : g.tpr == 512 ? 0.93 : 0.9;
  const double block_pref = threads >= 128 && threads <= 512 ? 1.0 : threads == 64 || threads == 1024 ? 0.95 : 0.9;
  // Enough blocks for two per SM, where there are rows to give them.
  const double fill = few_rows ? 1.0 : std::min(1.0, static_cast<double>(blocks) / (2.0 * device.multiprocessors));
  if (notes) {
    char text[200];
    std::snprintf(text, sizeof(text), "%d threads/row x %d rows/block, %d chunk(s) of %d per thread; %lld blocks at %lld rows",
                  g.tpr, g.rows, g.chunks, g.vec, static_cast<long long>(blocks), static_cast<long long>(typical_rows));
    notes->push_back(text);
    if (g.vec < max_vec) notes->push_back("narrower than 16-byte accesses");
    if (!few_rows && fill < 1.0) notes->push_back("fewer than 2 blocks per SM at this row count");
  }
  return fill * vec_pref * chunk_pref * reduce_pref * block_pref;
}

RowGeometryChoice conservative_row_geometry(int64_t cols, int max_elems) {
  int tpr = 32;
  while (tpr < 1024 && (cols + tpr - 1) / tpr > max_elems) tpr *= 2;
  return RowGeometryChoice{tpr, 1, 1, static_cast<int>((cols + tpr - 1) / tpr)};
}

std::vector<RowSplitChoice> row_split_geometries(int64_t cols, int64_t typical_rows, int vec, const DeviceProfile& device) {
  std::vector<RowSplitChoice> out;
  if (typical_rows >= device.multiprocessors || cols < 4096 || vec < 1 || cols % vec != 0) return out;
  for (int split = 4; split <= 256; split *= 2) {
    if (typical_rows * split > 4 * device.multiprocessors) break;
    const int64_t slice = ((cols + split - 1) / split + vec - 1) / vec * vec;
    for (int tpr : {32, 64, 128, 256, 512}) {
      if (tpr > device.max_threads_per_block || slice < static_cast<int64_t>(tpr) * vec) continue;
      const int steps = static_cast<int>((slice + static_cast<int64_t>(tpr) * vec - 1) / (static_cast<int64_t>(tpr) * vec));
      out.push_back(RowSplitChoice{tpr, vec, split, steps});
    }
  }
  return out;
}

double row_split_score(const RowSplitChoice& g, int64_t typical_rows, const DeviceProfile& device,
                       std::vector<std::string>* notes) {
  const int64_t blocks = typical_rows * g.split;
  const double fill = std::min(1.0, static_cast<double>(blocks) / device.multiprocessors);
  // A few vectors per thread keep loads in flight; many make the slice a serial loop.
  const double step_pref = g.steps >= 2 && g.steps <= 8 ? 1.0 : g.steps == 1 ? 0.95 : std::sqrt(8.0 / g.steps);
  const double reduce_pref = g.tpr <= 32 ? 1.0 : g.tpr <= 256 ? 0.97 : 0.93;
  if (notes) {
    char text[200];
    std::snprintf(text, sizeof(text), "split: %d blocks of %d threads per row, %d vector(s) of %d per thread; %lld blocks in all",
                  g.split, g.tpr, g.steps, g.vec, static_cast<long long>(blocks));
    notes->push_back(text);
    notes->push_back("second launch combines the partials (workspace)");
  }
  return 0.95 * fill * step_pref * reduce_pref;  // 0.95: the second launch
}

std::string rows_tag(int64_t rows_per_token, int64_t rows_fixed) {
  if (rows_per_token == 0) return "m" + std::to_string(rows_fixed);
  std::string tag = "m" + (rows_per_token == 1 ? std::string() : std::to_string(rows_per_token)) + "T";
  return rows_fixed == 0 ? tag : tag + "p" + std::to_string(rows_fixed);
}

std::string eps_tag(float eps) {
  for (int k = 1; k <= 12; ++k)
    if (eps == static_cast<float>(std::pow(10.0, -k))) return "e" + std::to_string(k);
  uint32_t bits = 0;
  std::memcpy(&bits, &eps, sizeof(bits));
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "ex%08x", bits);
  return buffer;
}

Launch row_launch(const Match& match, const ParamSet& params, const std::string& kernel) {
  Launch launch;
  launch.kernel = kernel;
  launch.grid_x = Extent{match.facts.at("rows_per_token"), match.facts.at("rows_fixed"), params.at("rows")};
  launch.block_x = static_cast<int>(params.at("tpr") * params.at("rows"));
  return launch;
}

int64_t split_partials_per_token(const Match& match, const ParamSet& params, int64_t bytes) {
  return params.count("split") ? match.facts.at("rows_per_token") * params.at("split") * bytes : 0;
}

int64_t split_partials_fixed(const Match& match, const ParamSet& params, int64_t bytes) {
  return params.count("split") ? match.facts.at("rows_fixed") * params.at("split") * bytes : 0;
}

Match row_program_match(const RowProgram& program, const std::string& variant) {
  Match m;
  m.variant = variant;
  m.dtype = program.dtype();
  m.out_dtype = program.stores.front().dtype;
  encode_row_program(program, m);
  return m;
}

TemplateFamily::Choice row_fallback_choice(int64_t cols, const std::string& note, const ParamSet& extra) {
  const RowGeometryChoice safe = conservative_row_geometry(cols, 16);
  TemplateFamily::Choice fallback;
  fallback.params = {{"tpr", safe.tpr}, {"vec", 1}, {"rows", 1}, {"fallback", 1}};
  for (const auto& [key, value] : extra) fallback.params[key] = value;
  fallback.score = 0.01;
  fallback.notes = {note};
  return fallback;
}

}  // namespace agentcompile::plan
