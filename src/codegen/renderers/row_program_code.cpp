// Renders row programs as device code (see row_program_code.h).
//
// Names in the generated struct: l<i> is load i (a pointer field, and Chunk::l<i>[VEC] its values),
// v<n> the value of program value n (a Chunk field when computed before the row op, a local array
// of post() after it), s<j> the pointer of store j. Everything computes in fp32; only stores round
// to the output dtype, exactly as the reference interpreter does.
#include "codegen/renderers/row_program_code.h"

#include <sstream>

#include "codegen/render.h"

namespace agentcompile::codegen {

namespace {

using ir::OpKind;
using plan::RowProgram;

std::string ll(int64_t v) { return std::to_string(v) + "LL"; }

// Whether load strides are those of a contiguous [rows, cols or 1] buffer: then its offset is row * width.
bool contiguous_rows(const RowProgram& p, const RowProgram::Load& load) {
  const int64_t width = load.col_stride != 0 ? p.cols : 1;
  int64_t expected = width;
  for (size_t d = p.lead.size(); d-- > 0;) {
    if (load.row_strides[d] != expected) return false;
    expected *= p.lead[d] == 0 ? 1 : p.lead[d];
  }
  return true;
}

bool broadcast_rows(const RowProgram::Load& load) {
  for (int64_t s : load.row_strides)
    if (s != 0) return false;
  return true;
}

class ProgramWriter {
 public:
  ProgramWriter(const RowProgram& p, int vec) : p_(p), vec_(vec), rows_op_(p.has_row_op()) {}

  std::string write() {
    const std::string V = std::to_string(vec_);
    src_ << "struct Program {\n";
    for (size_t i = 0; i < p_.loads.size(); ++i)
      src_ << "  const " << cuda_type(p_.loads[i].dtype) << "* l" << i << ";  // " << p_.loads[i].slot << "\n";
    for (size_t j = 0; j < p_.stores.size(); ++j)
      src_ << "  " << cuda_type(p_.stores[j].dtype) << "* s" << j << ";  // " << p_.stores[j].slot
           << (p_.stores[j].per_row ? " [rows]" : " [rows, " + std::to_string(p_.cols) + "]") << "\n";
    src_ << "  struct Chunk {\n    float x[" << V << "];\n";
    for (size_t i = 0; i < p_.loads.size(); ++i) src_ << "    float l" << i << "[" << V << "];\n";
    for (size_t s = 0; s < p_.steps.size(); ++s)
      if (in_chunk(static_cast<int>(s))) src_ << "    float v" << p_.step_value(static_cast<int>(s)) << "[" << V << "];\n";
    src_ << "  };\n";
    write_load();
    write_pre();
    const OpKind row = p_.row_op();
    if (rows_op_ && (row == OpKind::kRmsNorm || row == OpKind::kSoftmax)) write_post();
    if (rows_op_ && row != OpKind::kRmsNorm && row != OpKind::kSoftmax) write_store();
    src_ << "};\n";
    return src_.str();
  }

 private:
  bool is_row_step(int s) const { return s == p_.row_step; }
  // Values before the row op live in the chunk (the row op itself does not: post() computes it).
  bool in_chunk(int s) const { return !p_.steps[static_cast<size_t>(s)].post && !is_row_step(s); }

  // The expression of value n for element e, from pre() (in_post false) or post().
  std::string ref(int value) const {
    if (p_.is_load(value)) return "c.l" + std::to_string(value) + "[e]";
    const int s = value - static_cast<int>(p_.loads.size());
    const std::string name = "v" + std::to_string(value) + "[e]";
    return in_chunk(s) ? "c." + name : name;
  }

  std::string op_expression(const RowProgram::Step& step) const {
    const std::string a = step.a >= 0 ? ref(step.a) : "", b = step.b >= 0 ? ref(step.b) : "";
    switch (step.op) {
      case OpKind::kAdd: return a + " + " + b;
      case OpKind::kSub: return a + " - " + b;
      case OpKind::kMul: return a + " * " + b;
      case OpKind::kDiv: return a + " / " + b;
      case OpKind::kSilu: return "ac::silu(" + a + ")";
      case OpKind::kExp: return "__expf(" + a + ")";
      case OpKind::kNeg: return "-" + a;
      case OpKind::kCast: return a;  // fp32 carries every float dtype; the store rounds
      case OpKind::kRmsNorm: return b + " * (c.x[e] * s.inv_rms)";  // the reference's order
      case OpKind::kSoftmax: return "__expf(c.x[e] - s.max) * s.inv_sum";
      default: return "0.f /* unreachable: not a pointwise op */";
    }
  }

  std::string store_pointer(size_t j) const {
    return "s" + std::to_string(j) + " + row * " + ll(p_.cols) + " + col";
  }

  void write_load() {
    src_ << "  __device__ __forceinline__ void load(long long row, int col, Chunk& c) const {\n";
    bool coords = false;
    for (const auto& load : p_.loads) coords |= !broadcast_rows(load) && !contiguous_rows(p_, load);
    if (coords) {  // row -> coordinates over the leading dims, for partially broadcast loads
      src_ << "    long long rest = row;\n";
      for (size_t d = p_.lead.size(); d-- > 1;)
        src_ << "    const long long k" << d << " = rest % " << ll(p_.lead[d]) << ";\n    rest /= " << ll(p_.lead[d]) << ";\n";
      src_ << "    const long long k0 = rest;\n";
    }
    for (size_t i = 0; i < p_.loads.size(); ++i) {
      const auto& load = p_.loads[i];
      std::string offset;
      if (broadcast_rows(load)) {
        offset = "0";
      } else if (contiguous_rows(p_, load)) {
        offset = "row * " + ll(load.col_stride != 0 ? p_.cols : 1);
      } else {
        for (size_t d = 0; d < load.row_strides.size(); ++d) {
          if (load.row_strides[d] == 0) continue;
          if (!offset.empty()) offset += " + ";
          offset += "k" + std::to_string(d) + " * " + ll(load.row_strides[d]);
        }
      }
      const std::string T = cuda_type(load.dtype), I = std::to_string(i);
      if (load.col_stride != 0)
        src_ << "    ac::load_vec<" << T << ", " << vec_ << ">(l" << I << " + " << offset << " + col, c.l" << I << ");\n";
      else
        src_ << "    ac::load_splat<" << T << ", " << vec_ << ">(l" << I << " + " << offset << ", c.l" << I << ");\n";
    }
    src_ << "  }\n";
  }

  void write_pre() {
    src_ << "  __device__ __forceinline__ void pre(long long row, int col, Chunk& c) const {\n"
         << "#pragma unroll\n    for (int e = 0; e < " << vec_ << "; ++e) {\n";
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      if (!in_chunk(static_cast<int>(s))) continue;
      src_ << "      c.v" << p_.step_value(static_cast<int>(s)) << "[e] = " << op_expression(p_.steps[s]) << ";  // "
           << ir::op_name(p_.steps[s].op) << "\n";
    }
    if (rows_op_) src_ << "      c.x[e] = " << ref(p_.steps[static_cast<size_t>(p_.row_step)].a) << ";\n";
    src_ << "    }\n";
    for (size_t j = 0; j < p_.stores.size(); ++j) {
      const auto& store = p_.stores[j];
      if (store.per_row || !in_chunk(store.value - static_cast<int>(p_.loads.size()))) continue;
      src_ << "    ac::store_vec<" << cuda_type(store.dtype) << ", " << vec_ << ">(" << store_pointer(j) << ", c.v" << store.value
           << ");\n";
    }
    src_ << "  }\n";
  }

  void write_post() {
    src_ << "  __device__ __forceinline__ void post(long long row, int col, const Chunk& c, const ac::RowStats& s) const {\n";
    for (size_t s = 0; s < p_.steps.size(); ++s)
      if (!in_chunk(static_cast<int>(s))) src_ << "    float v" << p_.step_value(static_cast<int>(s)) << "[" << vec_ << "];\n";
    src_ << "#pragma unroll\n    for (int e = 0; e < " << vec_ << "; ++e) {\n";
    for (size_t s = 0; s < p_.steps.size(); ++s) {
      if (in_chunk(static_cast<int>(s))) continue;
      src_ << "      v" << p_.step_value(static_cast<int>(s)) << "[e] = " << op_expression(p_.steps[s]) << ";  // "
           << ir::op_name(p_.steps[s].op) << "\n";
    }
    src_ << "    }\n";
    for (size_t j = 0; j < p_.stores.size(); ++j) {
      const auto& store = p_.stores[j];
      if (in_chunk(store.value - static_cast<int>(p_.loads.size()))) continue;
      src_ << "    ac::store_vec<" << cuda_type(store.dtype) << ", " << vec_ << ">(" << store_pointer(j) << ", v" << store.value
           << ");\n";
    }
    src_ << "  }\n";
  }

  void write_store() {
    src_ << "  __device__ __forceinline__ void store(long long row, float value, int index) const {\n";
    for (size_t j = 0; j < p_.stores.size(); ++j) {
      const auto& store = p_.stores[j];
      if (!store.per_row) continue;
      if (store.dtype == ir::DType::kI32)
        src_ << "    s" << j << "[row] = index;\n";
      else
        src_ << "    s" << j << "[row] = ac::from_float<" << cuda_type(store.dtype) << ">(value);\n";
    }
    src_ << "  }\n";
  }

  const RowProgram& p_;
  const int vec_;
  const bool rows_op_;
  std::ostringstream src_;
};

}  // namespace

std::string render_row_program(const plan::RowProgram& program, int vec) { return ProgramWriter(program, vec).write(); }

std::string render_program_binding(const plan::RowProgram& p, const std::string& var) {
  std::ostringstream src;
  for (size_t i = 0; i < p.loads.size(); ++i)
    src << "  " << var << ".l" << i << " = static_cast<const " << cuda_type(p.loads[i].dtype) << "*>("
        << slot_expression(p.loads[i].slot) << ");\n";
  for (size_t j = 0; j < p.stores.size(); ++j)
    src << "  " << var << ".s" << j << " = static_cast<" << cuda_type(p.stores[j].dtype) << "*>("
        << slot_expression(p.stores[j].slot) << ");\n";
  return src.str();
}

std::string rows_expression(int64_t rows_per_token, int64_t rows_fixed) {
  return ll(rows_per_token) + " * a.T + " + ll(rows_fixed);
}

}  // namespace agentcompile::codegen
