// Renders row programs as device code (see row_program_code.h).
//
// Names in the generated struct: l<i> is load i (a pointer field for a memory load, and
// Chunk::l<i>[VEC] its values; an arange has only the chunk array, a literal neither: it is written
// where it is used), v<n> the value of program value n (a Chunk field when computed before the row
// op, a local array of post() after it), s<j> the pointer of store j. Values live in registers of
// their dtype's class: fp32 for every float dtype, int for i32, bool for bool; only stores round to
// the output dtype, exactly as the reference interpreter does.
#include "codegen/renderers/row_program_code.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "codegen/render.h"

namespace agentcompile::codegen {

namespace {

using ir::OpKind;
using plan::RowProgram;

std::string ll(int64_t v) { return std::to_string(v) + "LL"; }

// A double literal that reads back exactly.
std::string double_literal(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  std::string out = text;
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return "(" + out + ")";
}

const char* reg_type(ir::DType dtype) {
  if (dtype == ir::DType::kI32) return "int";
  if (dtype == ir::DType::kBool) return "bool";
  return "float";
}

// A number as a literal of `dtype`'s register type.
std::string literal(double value, ir::DType dtype) {
  if (dtype == ir::DType::kBool) return value != 0 ? "true" : "false";
  if (dtype == ir::DType::kI32) return "(" + std::to_string(static_cast<long long>(value)) + ")";
  const float f = static_cast<float>(value);
  if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  return "(" + float_literal(f) + ")";
}

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
  ProgramWriter(const RowProgram& p, int vec, const std::string& provided, bool fast_math)
      : p_(p), vec_(vec), rows_op_(p.has_row_op()), provided_(provided), fast_math_(fast_math) {}

  std::string write() {
    const std::string V = std::to_string(vec_);
    // Only a program that reads random_uniform includes its generator, so no other kernel's source changes.
    for (const auto& load : p_.loads)
      if (load.kind == RowProgram::LoadKind::kRandom) {
        src_ << "#include \"random.cuh\"\n\n";
        break;
      }
    src_ << "struct Program {\n";
    for (size_t i = 0; i < p_.loads.size(); ++i)
      if (p_.loads[i].kind == RowProgram::LoadKind::kMemory && !provided(p_.loads[i]))
        src_ << "  const " << cuda_type(p_.loads[i].dtype) << "* l" << i << ";  // " << p_.loads[i].slot << "\n";
    for (size_t j = 0; j < p_.stores.size(); ++j)
      src_ << "  " << cuda_type(p_.stores[j].dtype) << "* s" << j << ";  // " << p_.stores[j].slot
           << (p_.stores[j].per_row ? " [rows]" : " [rows, " + std::to_string(p_.cols) + "]") << "\n";
    // The row op's input and accumulator: fp32 (the templates' default), or int for an integer
    // reduction (ac::RowAcc reads the Acc a program names).
    if (p_.integer_row_op()) src_ << "  using Acc = int;\n";
    src_ << "  struct Chunk {\n    " << acc_type() << " x[" << V << "];\n";
    for (size_t i = 0; i < p_.loads.size(); ++i)
      if (p_.loads[i].kind != RowProgram::LoadKind::kLiteral)
        src_ << "    " << reg_type(p_.loads[i].dtype) << " l" << i << "[" << V << "];\n";
    for (size_t s = 0; s < p_.steps.size(); ++s)
      if (in_chunk(static_cast<int>(s)))
        src_ << "    " << reg_type(p_.steps[s].dtype) << " v" << p_.step_value(static_cast<int>(s)) << "[" << V << "];\n";
    src_ << "  };\n";
    write_load();
    write_pre();
    if (p_.elementwise_row_op()) write_post();
    if (rows_op_ && !p_.elementwise_row_op()) p_.column_form() ? write_store_cols() : write_store();
    src_ << "};\n";
    return src_.str();
  }

 private:
  bool is_row_step(int s) const { return s == p_.row_step; }
  const char* acc_type() const { return p_.integer_row_op() ? "int" : "float"; }
  bool provided(const RowProgram::Load& load) const {
    return !provided_.empty() && load.kind == RowProgram::LoadKind::kMemory && load.slot == provided_;
  }
  // Values before the row op live in the chunk (the row op itself does not: post() computes it).
  bool in_chunk(int s) const { return !p_.steps[static_cast<size_t>(s)].post && !is_row_step(s); }

  // The expression of value n for element e, from pre() or post().
  std::string ref(int value) const {
    if (p_.is_load(value)) {
      const RowProgram::Load& load = p_.loads[static_cast<size_t>(value)];
      if (load.kind == RowProgram::LoadKind::kLiteral) return literal(load.value, load.dtype);
      return "c.l" + std::to_string(value) + "[e]";
    }
    const int s = value - static_cast<int>(p_.loads.size());
    const std::string name = "v" + std::to_string(value) + "[e]";
    return in_chunk(s) ? "c." + name : name;
  }

  std::string cast_expression(const std::string& a, ir::DType from, ir::DType to) const {
    const std::string f = reg_type(from), t = reg_type(to);
    if (f == t) return a;  // fp32 carries every float dtype; the store rounds
    if (f == "float") return t == "int" ? "ac::float_to_int(" + a + ")" : "(" + a + " != 0.f)";
    if (f == "int") return t == "float" ? "static_cast<float>(" + a + ")" : "(" + a + " != 0)";
    return t == "float" ? "(" + a + " ? 1.f : 0.f)" : "(" + a + " ? 1 : 0)";
  }

  // pow as the reference computes it. Kernels build with --use_fast_math, where powf is
  // exp2(b * log2(a)): NaN for every negative base ((x - y) ** 2 is half NaN) and a few ulps off for
  // squares. Exponents 1, 2, 3 and 0.5 of a literal are spelled as products and a square root; any
  // other goes through ac::pow_real (pointwise.cuh), which gives a negative base with an integral
  // exponent the sign of its parity.
  std::string pow_expression(const RowProgram::Step& step, const std::string& a, const std::string& b) const {
    if (step.b >= 0 && p_.is_load(step.b)) {
      const RowProgram::Load& exponent = p_.loads[static_cast<size_t>(step.b)];
      if (exponent.kind == RowProgram::LoadKind::kLiteral) {
        if (exponent.value == 1.0) return a;
        if (exponent.value == 2.0) return "(" + a + " * " + a + ")";
        if (exponent.value == 3.0) return "(" + a + " * " + a + " * " + a + ")";
        if (exponent.value == 0.5) return "sqrtf(" + a + ")";
      }
    }
    return "ac::pow_real(" + a + ", " + b + ")";
  }

  std::string op_expression(const RowProgram::Step& step) const {
    const std::string a = step.a >= 0 ? ref(step.a) : "", b = step.b >= 0 ? ref(step.b) : "", c = step.c >= 0 ? ref(step.c) : "";
    const bool is_int = step.a >= 0 && p_.value_dtype(step.a) == ir::DType::kI32;
    switch (step.op) {
      case OpKind::kAdd: return a + " + " + b;
      case OpKind::kSub: return a + " - " + b;
      case OpKind::kMul: return a + " * " + b;
      case OpKind::kDiv: return a + " / " + b;  // int division truncates toward zero, as C++'s does
      case OpKind::kPow: return pow_expression(step, a, b);
      case OpKind::kMaximum: return "ac::nan_max(" + a + ", " + b + ")";
      case OpKind::kMinimum: return "ac::nan_min(" + a + ", " + b + ")";
      case OpKind::kEq: return "(" + a + " == " + b + ")";
      case OpKind::kNe: return "(" + a + " != " + b + ")";
      case OpKind::kLt: return "(" + a + " < " + b + ")";
      case OpKind::kLe: return "(" + a + " <= " + b + ")";
      case OpKind::kGt: return "(" + a + " > " + b + ")";
      case OpKind::kGe: return "(" + a + " >= " + b + ")";
      case OpKind::kLogicalAnd: return "(" + a + " && " + b + ")";
      case OpKind::kLogicalOr: return "(" + a + " || " + b + ")";
      case OpKind::kLogicalNot: return "!" + a;
      case OpKind::kWhere: return "(" + a + " ? " + b + " : " + c + ")";
      case OpKind::kSilu: return "ac::silu(" + a + ")";
      case OpKind::kExp: return "__expf(" + a + ")";
      case OpKind::kNeg: return "-" + a;
      case OpKind::kCast: return cast_expression(a, p_.value_dtype(step.a), step.dtype);
      case OpKind::kLog: return "logf(" + a + ")";
      case OpKind::kLog1p: return "log1pf(" + a + ")";
      case OpKind::kExpm1: return (fast_math_ ? "ac::expm1_fast(" : "expm1f(") + a + ")";
      case OpKind::kSqrt: return "sqrtf(" + a + ")";
      case OpKind::kRsqrt: return "rsqrtf(" + a + ")";
      case OpKind::kAbs: return is_int ? "abs(" + a + ")" : "fabsf(" + a + ")";
      case OpKind::kTanh: return "tanhf(" + a + ")";
      case OpKind::kSigmoid: return (fast_math_ ? "ac::sigmoid_fast(" : "ac::sigmoid(") + a + ")";
      case OpKind::kRelu: return "ac::relu(" + a + ")";
      case OpKind::kErf: return (fast_math_ ? "ac::erf_fast(" : "erff(") + a + ")";
      case OpKind::kSin: return "sinf(" + a + ")";
      case OpKind::kCos: return "cosf(" + a + ")";
      case OpKind::kReciprocal: return "1.f / " + a;
      case OpKind::kFloor: return "floorf(" + a + ")";
      case OpKind::kCeil: return "ceilf(" + a + ")";
      case OpKind::kRound: return "rintf(" + a + ")";  // half to even
      case OpKind::kSign: return is_int ? "ac::signi(" + a + ")" : "ac::signf(" + a + ")";
      case OpKind::kGelu: return (step.flags & 1 ? "ac::gelu_tanh(" : fast_math_ ? "ac::gelu_erf_fast(" : "ac::gelu_erf(") + a + ")";
      case OpKind::kLeakyRelu: return "ac::leaky_relu(" + a + ", " + literal(step.p0, ir::DType::kF32) + ")";
      case OpKind::kClamp: {
        std::string v = a;
        if (step.flags & 1) v = "ac::clamp_lo(" + v + ", " + literal(step.p0, ir::DType::kF32) + ")";
        if (step.flags & 2) v = "ac::clamp_hi(" + v + ", " + literal(step.p1, ir::DType::kF32) + ")";
        return v;
      }
      case OpKind::kRmsNorm: return b + " * (c.x[e] * s.inv_rms)";  // the reference's order
      case OpKind::kLayerNorm: {
        std::string v = "(c.x[e] - s.mean) * s.rstd";
        if (step.b >= 0) v = "(" + v + ") * " + b;
        if (step.c >= 0) v += " + " + c;
        return v;
      }
      case OpKind::kSoftmax: return "__expf(c.x[e] - s.max) * s.inv_sum";
      case OpKind::kLogSoftmax: return "c.x[e] - s.max - s.log_sum";
      case OpKind::kCumsum:
      case OpKind::kCumprod: return "c.x[e]";  // the scan engine wrote the scanned values there
      default: return "0 /* unreachable: not a pointwise op */";
    }
  }

  std::string store_pointer(size_t j) const { return "s" + std::to_string(j) + " + row * " + ll(p_.cols) + " + col"; }

  void write_load() {
    src_ << "  __device__ __forceinline__ void load(long long row, int col, Chunk& c) const {\n";
    bool coords = false;
    for (const auto& load : p_.loads)
      coords |= load.kind != RowProgram::LoadKind::kLiteral && !provided(load) && !broadcast_rows(load) && !contiguous_rows(p_, load);
    if (coords) {  // row -> coordinates over the leading dims, for partially broadcast loads
      src_ << "    long long rest = row;\n";
      for (size_t d = p_.lead.size(); d-- > 1;)
        src_ << "    const long long k" << d << " = rest % " << ll(p_.lead[d]) << ";\n    rest /= " << ll(p_.lead[d]) << ";\n";
      src_ << "    const long long k0 = rest;\n";
    }
    for (size_t i = 0; i < p_.loads.size(); ++i) {
      const auto& load = p_.loads[i];
      if (load.kind == RowProgram::LoadKind::kLiteral || provided(load)) continue;
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
      if (load.kind == RowProgram::LoadKind::kArange) {
        // start + step * index, the index being the element's offset into the arange.
        const std::string index = "(" + offset + (load.col_stride != 0 ? " + col + e" : "") + ")";
        std::string value;
        if (load.dtype == ir::DType::kI32)
          value = "static_cast<int>(" + std::to_string(static_cast<long long>(load.value)) + "LL + " +
                  std::to_string(static_cast<long long>(load.step)) + "LL * " + index + ")";
        else
          value = "static_cast<float>(" + double_literal(load.value) + " + " + double_literal(load.step) + " * static_cast<double>" + index + ")";
        src_ << "#pragma unroll\n    for (int e = 0; e < " << vec_ << "; ++e) c.l" << I << "[e] = " << value << ";\n";
      } else if (load.kind == RowProgram::LoadKind::kRandom) {
        // Philox of the seed and the element's offset into the random_uniform (kernels/random.cuh).
        const std::string index = "static_cast<unsigned long long>(" + offset + (load.col_stride != 0 ? " + col + e" : "") + ")";
        src_ << "#pragma unroll\n    for (int e = 0; e < " << vec_ << "; ++e) c.l" << I << "[e] = ac::random_uniform("
             << static_cast<unsigned long long>(load.value) << "ULL, " << index << ");\n";
      } else if (load.col_stride != 0) {
        src_ << "    ac::load_vec<" << template_args({{"T", T}, {"VEC", vec_}}) << ">(l" << I << " + " << offset << " + col, c.l" << I << ");\n";
      } else {
        src_ << "    ac::load_splat<" << template_args({{"T", T}, {"VEC", vec_}}) << ">(l" << I << " + " << offset << ", c.l" << I << ");\n";
      }
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
      src_ << "    ac::store_vec<" << template_args({{"T", cuda_type(store.dtype)}, {"VEC", vec_}}) << ">(" << store_pointer(j) << ", c.v" << store.value
           << ");\n";
    }
    src_ << "  }\n";
  }

  void write_post() {
    src_ << "  __device__ __forceinline__ void post(long long row, int col, const Chunk& c, const ac::RowStats& s) const {\n";
    for (size_t s = 0; s < p_.steps.size(); ++s)
      if (!in_chunk(static_cast<int>(s)))
        src_ << "    " << reg_type(p_.steps[s].dtype) << " v" << p_.step_value(static_cast<int>(s)) << "[" << vec_ << "];\n";
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
      src_ << "    ac::store_vec<" << template_args({{"T", cuda_type(store.dtype)}, {"VEC", vec_}}) << ">(" << store_pointer(j) << ", v" << store.value
           << ");\n";
    }
    src_ << "  }\n";
  }

  void write_store() {
    src_ << "  __device__ __forceinline__ void store(long long row, " << acc_type() << " value, int index) const {\n";
    for (size_t j = 0; j < p_.stores.size(); ++j) {
      const auto& store = p_.stores[j];
      if (!store.per_row) continue;
      if (store.dtype == ir::DType::kI32)
        src_ << "    s" << j << "[row] = " << (p_.integer_row_op() ? "value" : "index") << ";\n";
      else
        src_ << "    s" << j << "[row] = ac::from_float<" << template_args({{"T", cuda_type(store.dtype)}}) << ">(value);\n";
    }
    src_ << "  }\n";
  }

  // The column form's results: VEC columns of one output row ([outer * inner, cols]).
  void write_store_cols() {
    src_ << "  __device__ __forceinline__ void store_cols(long long row, int col, const float (&value)[" << vec_
         << "], const int (&index)[" << vec_ << "]) const {\n";
    for (size_t j = 0; j < p_.stores.size(); ++j) {
      const auto& store = p_.stores[j];
      if (!store.per_row) continue;
      src_ << "    ac::store_vec<" << template_args({{"T", cuda_type(store.dtype)}, {"VEC", vec_}}) << ">(" << store_pointer(j) << ", "
           << (store.dtype == ir::DType::kI32 ? "index" : "value") << ");\n";
    }
    src_ << "  }\n";
  }

  const RowProgram& p_;
  const int vec_;
  const bool rows_op_;
  const std::string provided_;
  const bool fast_math_;
  std::ostringstream src_;
};

}  // namespace

std::string render_row_program(const plan::RowProgram& program, int vec, const std::string& provided, bool fast_math) {
  return ProgramWriter(program, vec, provided, fast_math).write();
}

std::string render_program_binding(const plan::RowProgram& p, const std::string& var, const std::string& provided) {
  std::ostringstream src;
  for (size_t i = 0; i < p.loads.size(); ++i)
    if (p.loads[i].kind == RowProgram::LoadKind::kMemory && (provided.empty() || p.loads[i].slot != provided))
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

const char* row_reduction_enum(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kReduceMax: return "ac::kRowMax";
    case ir::OpKind::kReduceMin: return "ac::kRowMin";
    case ir::OpKind::kReduceMean: return "ac::kRowMean";
    case ir::OpKind::kReduceProd: return "ac::kRowProd";
    case ir::OpKind::kArgmax: return "ac::kRowArgmax";
    case ir::OpKind::kArgmin: return "ac::kRowArgmin";
    default: return "ac::kRowSum";
  }
}

}  // namespace agentcompile::codegen
