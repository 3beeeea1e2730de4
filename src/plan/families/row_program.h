// Row programs: a fusion region made of pointwise ops (add, sub, mul, div, silu, exp, neg, cast)
// around at most one row op (rmsnorm, softmax, reduce_sum/max/mean, argmax over the last axis),
// as plain data. The rmsnorm, softmax, reduction and elementwise families match regions through
// it, keep it in their Match (facts and roles, see encode_row_program) and the renderers turn it
// back into straight-line device code (codegen/renderers/row_program_code.h). Every op, dtype and
// index in it comes from the IR; nothing else reaches the generated source.
//
// The iteration space is [lead..., cols]: the row op's input, or the outputs' common shape for a
// pure pointwise chain. Rows are the leading dims flattened (the first may be T); every other dim
// is static. Each value the program reads from memory (a load) broadcasts into that space numpy
// style, where a broadcast dim is a static 1 or missing: a load has a stride per leading dim (0
// where broadcast) and a column stride of 1, or 0 when it is broadcast along the columns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/template_family.h"

namespace agentcompile::plan {

struct RowProgram {
  struct Load {
    std::string slot;  // "in0", "w1"
    ir::DType dtype = ir::DType::kF16;
    std::vector<int64_t> row_strides;  // per leading dim, elements; 0 where broadcast
    int64_t col_stride = 1;            // 1, or 0 when broadcast along the columns
  };
  struct Step {
    ir::OpKind op = ir::OpKind::kAdd;
    int a = -1, b = -1;  // operand values (see value numbering below); -1 when absent
    ir::DType dtype = ir::DType::kF32;
    bool post = false;   // reads the row op's result (directly or through other steps)
  };
  struct Store {
    int value = -1;
    std::string slot;  // "out0"
    ir::DType dtype = ir::DType::kF16;
    bool per_row = false;  // a reduction's result: one element per row
  };

  // Values are numbered loads first (0 .. loads-1), then steps (loads + step index).
  std::vector<int64_t> lead;  // leading dims; lead[0] == 0 stands for T
  int64_t cols = 1;
  std::vector<Load> loads;
  std::vector<Step> steps;
  std::vector<Store> stores;
  int row_step = -1;  // index in steps of the row op, -1 for a pure pointwise chain
  float eps = 0;      // rmsnorm's epsilon (fp32, as the reference computes with it)

  int step_value(int step) const { return static_cast<int>(loads.size()) + step; }
  bool is_load(int value) const { return value < static_cast<int>(loads.size()); }
  const Step& step_of(int value) const { return steps[static_cast<size_t>(value) - loads.size()]; }
  ir::OpKind row_op() const { return row_step < 0 ? ir::OpKind::kAdd : steps[static_cast<size_t>(row_step)].op; }
  bool has_row_op() const { return row_step >= 0; }
  int64_t rows_per_token() const;  // rows = rows_per_token * T + rows_fixed
  int64_t rows_fixed() const;
  // Rows at a representative size: the static count, or 256 tokens' worth for T-dependent rows.
  int64_t typical_rows() const;
  ir::DType dtype() const;     // the activation dtype that names kernels
  int max_vector() const;      // widest VEC (power of two) that keeps every access within 16 bytes
  int pre_steps() const;       // steps computed before the row op (the row op included)
  std::string ops_tag() const; // "add_rmsnorm": the op names in order, for kernel names
};

// Analyzes a fusion region; nullopt when it is not a row program (other ops, a side effect, a
// reduction over another axis, a dynamic dim other than the first, an intermediate view ...).
std::optional<RowProgram> analyze_row_program(const RegionContext& ctx);

// The program in a Match: facts (sizes, ops, dtypes, strides) and roles (slots).
void encode_row_program(const RowProgram& program, Match& match);
RowProgram decode_row_program(const Match& match);
// 8 hex digits over the encoded program: tells apart kernels of different chains of equal size.
std::string row_program_digest(const Match& match);

// Row geometry shared by the row families: TPR threads per row, VEC columns per access, ROWS rows
// per block, and the heuristic that ranks a choice for a memory-bound row kernel.
struct RowGeometryChoice {
  int tpr = 32, vec = 1, rows = 1;
  int chunks = 1;  // vectors per thread per row
};
// Every geometry valid on the device for rows of `cols` columns: threads per block a multiple of 32
// and at most the device's limit, cols % vec == 0, at least one vector per thread, and at most
// `max_chunks` chunks per thread (register-resident rows); `vecs` lists the vector widths to try.
std::vector<RowGeometryChoice> row_geometries(int64_t cols, int64_t typical_rows, const std::vector<int>& vecs,
                                              int max_chunks, const DeviceProfile& device);
// Heuristic score of a geometry for a memory-bound row kernel (higher first) and the reason.
double row_geometry_score(const RowGeometryChoice& g, int max_vec, int64_t typical_rows, const DeviceProfile& device,
                          std::vector<std::string>* notes);
// The most conservative geometry: scalar accesses (no alignment assumed), one row per block, the
// fewest threads that keep a thread's share of the row within `max_chunks` elements.
RowGeometryChoice conservative_row_geometry(int64_t cols, int max_chunks);

// Split forms for few long rows (a vocabulary): SPLIT blocks of TPR threads share a row, one slice
// of columns each, and a second launch combines their partials through the workspace.
struct RowSplitChoice {
  int tpr = 256, vec = 1, split = 1;
  int steps = 1;  // vectors per thread in a slice
};
// Offered only where rows are fewer than the SMs and long (>= 4096 columns): splits that fill the
// machine without more than ~4 blocks per SM, every thread with at least one vector.
std::vector<RowSplitChoice> row_split_geometries(int64_t cols, int64_t typical_rows, int vec, const DeviceProfile& device);
double row_split_score(const RowSplitChoice& g, int64_t typical_rows, const DeviceProfile& device,
                       std::vector<std::string>* notes);

// "m1", "mT", "m16T": the rows of a launch in a kernel name (rows_per_token * T + rows_fixed).
std::string rows_tag(int64_t rows_per_token, int64_t rows_fixed);

// A match carrying `program` (its dtypes and the encoded program) under `variant`.
Match row_program_match(const RowProgram& program, const std::string& variant);
// The conservative fallback of a row family: scalar accesses, one row per block; `extra` adds
// family-specific parameters.
TemplateFamily::Choice row_fallback_choice(int64_t cols, const std::string& note, const ParamSet& extra = {});

// The one-launch geometry the row families share: `rows` rows per block of tpr * rows threads, over
// rows_per_token * T + rows_fixed rows.
Launch row_launch(const Match& match, const ParamSet& params, const std::string& kernel);
// Scratch of the split (two-launch) forms: `bytes` per row and slice; 0 without a split.
int64_t split_partials_per_token(const Match& match, const ParamSet& params, int64_t bytes);
int64_t split_partials_fixed(const Match& match, const ParamSet& params, int64_t bytes);

// "e6" for eps == 1e-6 (as fp32), else "ex" and the fp32 bits in hex: eps in a kernel name.
std::string eps_tag(float eps);

}  // namespace agentcompile::plan
