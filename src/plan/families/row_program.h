// Row programs: a fusion region made of pointwise ops (arithmetic, comparisons, where, unary math,
// activations, casts between float, i32 and bool) around at most one row op (rmsnorm, layer_norm,
// softmax, log_softmax, a reduction, argmax/argmin, cumsum/cumprod; the row op reads floats, except
// sum, max, min and prod, which may reduce i32 values to an i32 result), as plain data. The row
// families (rmsnorm, layernorm, softmax, reduction, scan, elementwise, columns) match regions through
// it, keep it in their configuration records (serialized as match facts and roles, see
// encode_row_program) and the renderers turn it into straight-line device code
// (codegen/renderers/row_program_code.h). Every op, dtype, index and literal in it comes from the
// IR; nothing else reaches the generated source.
//
// The iteration space is [lead..., cols]: the row op's input, or the outputs' common shape for a
// pure pointwise chain. Rows are the leading dims flattened (the first may be T); every other dim
// is static. The row op runs along the columns, or (the column form: reductions and scans over
// another axis) along leading dim `reduce_lead`. Each value the program reads (a load) broadcasts
// into that space numpy style, where a broadcast dim is a static 1 or missing: a load has a stride
// per leading dim (0 where broadcast) and a column stride of 1, or 0 when it is broadcast along the
// columns. A load reads memory (an interface slot), or is computed where it is read: a literal (a
// constant of one value), an arange (start + step * index) or a random_uniform (Philox of the seed
// and the index, kernels/random.cuh), the index being the element's offset into the source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/families/row_geometry.h"
#include "plan/template_family.h"

namespace agentcompile::plan {

struct RowProgram {
  enum class LoadKind : uint8_t { kMemory, kLiteral, kArange, kRandom };
  struct Load {
    LoadKind kind = LoadKind::kMemory;
    std::string slot;  // "in0", "w1", "workspace" (memory loads)
    ir::DType dtype = ir::DType::kF16;
    std::vector<int64_t> row_strides;  // per leading dim, elements; 0 where broadcast
    int64_t col_stride = 1;            // 1, or 0 when broadcast along the columns
    double value = 0;                  // a literal's value; an arange's start; a random_uniform's seed
    double step = 0;                   // an arange's step
  };
  struct Step {
    ir::OpKind op = ir::OpKind::kAdd;
    int a = -1, b = -1, c = -1;  // operand values (see value numbering below); -1 when absent
    ir::DType dtype = ir::DType::kF32;
    bool post = false;   // reads the row op's result (directly or through other steps)
    // Attributes: leaky_relu's slope (p0); clamp's lo (p0, flag 1) and hi (p1, flag 2); gelu's tanh
    // approximation (flag 1); layer_norm's affine operands are b (weight) and c (bias).
    double p0 = 0, p1 = 0;
    int flags = 0;
  };
  struct Store {
    int value = -1;
    std::string slot;  // "out0"
    ir::DType dtype = ir::DType::kF16;
    bool per_row = false;  // a reduction's result: one element per row (per output row and column in the column form)
  };

  // Values are numbered loads first (0 .. loads-1), then steps (loads + step index).
  std::vector<int64_t> lead;  // leading dims; lead[0] == 0 stands for T
  int64_t cols = 1;
  std::vector<Load> loads;
  std::vector<Step> steps;
  std::vector<Store> stores;
  int row_step = -1;      // index in steps of the row op, -1 for a pure pointwise chain
  int reduce_lead = -1;   // the column form: the leading dim the row op runs along; -1: along the columns
  float eps = 0;          // a norm's epsilon (fp32, as the reference computes with it)

  int step_value(int step) const { return static_cast<int>(loads.size()) + step; }
  bool is_load(int value) const { return value < static_cast<int>(loads.size()); }
  const Step& step_of(int value) const { return steps[static_cast<size_t>(value) - loads.size()]; }
  ir::DType value_dtype(int value) const;
  ir::OpKind row_op() const { return row_step < 0 ? ir::OpKind::kAdd : steps[static_cast<size_t>(row_step)].op; }
  bool has_row_op() const { return row_step >= 0; }
  bool column_form() const { return reduce_lead >= 0; }
  // A sum, max, min or product of i32 values: accumulated in int (the reduction family's row form).
  bool integer_row_op() const;
  // A row op whose result has the input's shape (norms, softmax, scans), not one value per row.
  bool elementwise_row_op() const;
  int64_t rows_per_token() const;  // rows = rows_per_token * T + rows_fixed
  int64_t rows_fixed() const;
  // Rows at a representative size: the static count, or 512 tokens' worth for T-dependent rows.
  int64_t typical_rows() const;
  // The column form's geometry: [outer, n, inner] leading rows around the reduced dim; outer may be
  // T-dependent (outer_per_token * T + outer_fixed).
  int64_t reduced_length() const;
  int64_t inner_rows() const;
  int64_t outer_per_token() const;
  int64_t outer_fixed() const;
  ir::DType dtype() const;     // the activation dtype that names kernels
  int max_vector() const;      // widest VEC (power of two, at most 8) that keeps every access within 16 bytes
  int pre_steps() const;       // steps computed before the row op (the row op included)
  std::string ops_tag() const; // "add_rmsnorm": the op names in order, for kernel names
};

// Analyzes a fusion region; nullopt when it is not a row program (other ops, a side effect, a
// softmax or norm over another axis, a dynamic dim other than the first, an intermediate view ...).
std::optional<RowProgram> analyze_row_program(const RegionContext& ctx);

// A value computed before the nodes analyzed that the program reads from a slot of its own (a GEMM's
// product in the workspace, for a matmul region's epilogue), plus `plus` when given (a linear's
// bias): the program's first step computes it, so it can be stored like any other value.
struct VirtualLoad {
  ir::ValueId value = ir::kNoValue;
  std::string slot;
  ir::DType dtype = ir::DType::kF32;
  ir::ValueId plus = ir::kNoValue;
};
// The pointwise program of nodes [first, region end) of a region (a matmul's epilogue) over the
// space `space`, reading `virtual_loads` for values computed before `first`. nullopt when a node is
// not pointwise or does not fit.
std::optional<RowProgram> analyze_pointwise_tail(const RegionContext& ctx, size_t first, const ir::Shape& space,
                                                 const std::vector<VirtualLoad>& virtual_loads);

// The program in a serialized match: facts (sizes, ops, dtypes, strides, literals) and roles
// (slots); decode_row_program reads it back.
void encode_row_program(const RowProgram& program, Match& match);
RowProgram decode_row_program(const Match& match);
// 8 hex digits over a serialized match (its facts and roles): tells apart kernels of different chains
// of equal size.
std::string row_program_digest(const Match& match);

// The serialized match of `program` (its dtypes and the encoded program) under `variant`.
Match row_program_match(const RowProgram& program, const std::string& variant);

}  // namespace agentcompile::plan
