// General matmul regions (see matmul_general.h).
#include "plan/families/matmul_general.h"

#include <algorithm>

#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

using ir::OpKind;

// An operand of the GEMM: its interface slot, read directly or through a transpose node of the region.
struct GemmOperand {
  std::string slot;
  bool transposed = false;
};

std::optional<GemmOperand> gemm_operand(const RegionContext& ctx, ir::ValueId value) {
  GemmOperand out;
  const int producer = ctx.function->value(value).producer;
  if (producer >= 0 && ctx.function->nodes[static_cast<size_t>(producer)].op == OpKind::kTranspose &&
      ctx.slot_of(value).empty()) {
    out.transposed = true;
    value = ctx.function->nodes[static_cast<size_t>(producer)].operands[0];
  }
  out.slot = ctx.slot_of(value);
  if (out.slot.empty() || out.slot.rfind("out", 0) == 0) return std::nullopt;
  return out;
}

int64_t product(const ir::Shape& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= shape[i].value;
  return p;
}

}  // namespace

std::optional<Match> match_general_matmul(const RegionContext& ctx) {
  if (ctx.region->kind != analysis::RegionKind::kMatmul) return std::nullopt;
  const ir::Function& f = *ctx.function;
  size_t mm = 0;
  while (mm < ctx.size() && ctx.node(static_cast<int>(mm)).op == OpKind::kTranspose) ++mm;
  if (mm >= ctx.size()) return std::nullopt;
  const ir::Node& node = ctx.node(static_cast<int>(mm));
  if (node.op != OpKind::kLinear && node.op != OpKind::kMatmul) return std::nullopt;
  const ir::TensorType& out = f.type(node.result);
  if (!ir::is_float(out.dtype)) return std::nullopt;

  Match m;
  m.variant = "program";
  m.dtype = out.dtype;
  m.out_dtype = out.dtype;
  auto a = gemm_operand(ctx, node.operands[0]);
  auto b = gemm_operand(ctx, node.operands[1]);
  if (!a || !b) return std::nullopt;
  const ir::Shape& x = f.type(node.operands[0]).shape;
  const ir::Shape& y = f.type(node.operands[1]).shape;
  int64_t batch = 1, M = 0, N = 0, K = 0;
  if (node.op == OpKind::kLinear) {
    // x[..., K] @ w[N, K]^T: the rows of x flattened (the first may be T), w read transposed.
    if (a->transposed || b->transposed || x.empty()) return std::nullopt;
    for (size_t d = 1; d < x.size(); ++d)
      if (!x[d].is_static()) return std::nullopt;
    if (x.size() > 1 && !x[0].is_static() && x[0].symbol != ir::Symbol::kT) return std::nullopt;
    const int64_t inner_rows = x.size() > 1 ? product(x, 1, x.size() - 1) : 1;
    if (x.size() > 1 && !x[0].is_static()) {
      if (inner_rows != 1) return std::nullopt;  // rows are T alone
      M = 0;
    } else {
      M = x.size() > 1 ? product(x, 0, x.size() - 1) : 1;
    }
    K = x.back().value;
    N = y[0].value;
    m.facts["trans_a"] = 0;
    m.facts["trans_b"] = 1;
  } else {
    // a[..., M, K] @ b[..., K, N], batch dims equal and static, or T leading: M itself when there are
    // no batch dims (a captured module's batch rows), else the one batch dim.
    const size_t r = out.shape.size();
    if (r < 2 || x.size() != r || y.size() != r) return std::nullopt;
    const bool leading_T = !out.shape[0].is_static();
    if (leading_T && (out.shape[0].symbol != ir::Symbol::kT || r > 3)) return std::nullopt;
    for (size_t d = leading_T ? 1 : 0; d < r; ++d)
      if (!out.shape[d].is_static()) return std::nullopt;
    if (!x[r - 1].is_static()) return std::nullopt;
    if (leading_T && r == 3) m.facts["batch_T"] = 1;
    batch = leading_T ? 1 : product(out.shape, 0, r - 2);
    M = leading_T && r == 2 ? 0 : out.shape[r - 2].value;
    N = out.shape[r - 1].value;
    K = x[r - 1].value;
    m.facts["trans_a"] = a->transposed;
    m.facts["trans_b"] = b->transposed;
  }
  if (M >= (int64_t{1} << 31) || N >= (int64_t{1} << 31) || K >= (int64_t{1} << 31) || N == 0 || K == 0) return std::nullopt;
  m.roles["a"] = a->slot;
  m.roles["b"] = b->slot;
  m.facts["batch"] = batch;
  m.facts["M"] = M;
  m.facts["N"] = N;
  m.facts["K"] = K;

  // Every node after the product is its epilogue; a linear's bias is the epilogue's first add.
  for (size_t i = 0; i < mm; ++i)  // transposes feed the product and nothing else
    if (!ctx.slot_of(ctx.node(static_cast<int>(i)).result).empty()) return std::nullopt;
  const bool bias = node.operands.size() == 3;
  if (mm + 1 == ctx.size() && !bias) {
    m.roles["c"] = ctx.slot_of(node.result);
    if (m.roles["c"].rfind("out", 0) != 0) return std::nullopt;
    m.facts["epilogue"] = 0;
    return m;
  }
  VirtualLoad product_load{node.result, "workspace", ir::DType::kF32, bias ? node.operands[2] : ir::kNoValue};
  auto program = analyze_pointwise_tail(ctx, mm + 1, out.shape, {product_load});
  if (!program) return std::nullopt;
  encode_row_program(*program, m);
  m.facts["epilogue"] = 1;
  // Vectors as wide as the program and the row length allow (the workspace and outputs are aligned).
  int vec = program->max_vector();
  while (vec > 1 && program->cols % vec != 0) vec /= 2;
  m.facts["epilogue_vec"] = vec;
  m.out_dtype = program->stores.front().dtype;
  return m;
}

std::vector<Launch> general_matmul_launches(const Match& m, const std::string& base) {
  const bool epilogue = m.facts.at("epilogue") != 0;
  const int64_t M = m.facts.at("M"), N = m.facts.at("N"), K = m.facts.at("K");
  const bool ta = m.facts.at("trans_a") != 0, tb = m.facts.at("trans_b") != 0;
  Launch gemm;
  gemm.kernel = "cublasGemmStridedBatchedEx";
  gemm.library = true;
  // Row-major operands as cuBLAS's column-major ones (library_calls.cpp): leading dims of the stored
  // matrices, and the elements between batches.
  gemm.library_args = {{"op", "gemm_batched"},
                       {"a", m.roles.at("a")},
                       {"b", m.roles.at("b")},
                       {"c", epilogue ? "workspace:0" : m.roles.at("c")},
                       {"m", M == 0 ? "T" : std::to_string(M)},
                       {"n", std::to_string(N)},
                       {"k", std::to_string(K)},
                       {"batch", m.facts.count("batch_T") ? "T" : std::to_string(m.facts.at("batch"))},
                       {"trans_a", ta ? "1" : "0"},
                       {"trans_b", tb ? "1" : "0"},
                       {"ab_dtype", std::string(ir::dtype_name(m.dtype))},
                       {"c_dtype", epilogue ? "f32" : std::string(ir::dtype_name(m.dtype))}};
  if (!epilogue) return {gemm};
  const RowProgram p = decode_row_program(m);
  const int64_t vec = m.facts.at("epilogue_vec");
  Launch program;
  program.kernel = base + "_program";
  program.block_x = 256;
  const int64_t per_row = p.cols / vec;
  program.grid_x = Extent{p.rows_per_token() * per_row, p.rows_fixed() * per_row, 256};
  return {gemm, program};
}

// The fp32 product: [batch, M, N] (M or the batch may be T).
int64_t general_matmul_workspace_per_token(const Match& m) {
  if (!m.facts.at("epilogue")) return 0;
  if (m.facts.at("M") == 0) return m.facts.at("N") * 4;
  return m.facts.count("batch_T") ? m.facts.at("M") * m.facts.at("N") * 4 : 0;
}

int64_t general_matmul_workspace_fixed(const Match& m) {
  return m.facts.at("epilogue") && m.facts.at("M") != 0 && !m.facts.count("batch_T") ? m.facts.at("batch") * m.facts.at("M") * m.facts.at("N") * 4
                                                                                      : 0;
}

}  // namespace agentcompile::plan
