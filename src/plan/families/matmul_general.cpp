// General matmul regions (see matmul_general.h).
#include "plan/families/matmul_general.h"

#include <algorithm>
#include <cassert>

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

std::optional<GeneralMatmul> match_general_matmul(const RegionContext& ctx) {
  if (ctx.region->kind != analysis::RegionKind::kMatmul) return std::nullopt;
  const ir::Function& f = *ctx.function;
  size_t mm = 0;
  while (mm < ctx.size() && ctx.node(static_cast<int>(mm)).op == OpKind::kTranspose) ++mm;
  if (mm >= ctx.size()) return std::nullopt;
  const ir::Node& node = ctx.node(static_cast<int>(mm));
  if (node.op != OpKind::kLinear && node.op != OpKind::kMatmul) return std::nullopt;
  const ir::TensorType& out = f.type(node.result);
  if (!ir::is_float(out.dtype)) return std::nullopt;
  if (ir::is_quantized(f.type(node.operands[1]).dtype)) return std::nullopt;  // the GEMM reads plain weights

  GeneralMatmul m;
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
    m.trans_a = false;
    m.trans_b = true;
  } else {
    // a[..., M, K] @ b[..., K, N], batch dims equal and static, or T leading: M itself when there are
    // no batch dims (a captured module's batch rows), else the first batch dim (T times the static
    // batch dims after it: [T, heads, M, K] @ [T, heads, K, N] is T * heads products).
    const size_t r = out.shape.size();
    if (r < 2 || x.size() != r || y.size() != r) return std::nullopt;
    const bool leading_T = !out.shape[0].is_static();
    if (leading_T && out.shape[0].symbol != ir::Symbol::kT) return std::nullopt;
    for (size_t d = leading_T ? 1 : 0; d < r; ++d)
      if (!out.shape[d].is_static()) return std::nullopt;
    if (!x[r - 1].is_static()) return std::nullopt;
    m.batch_T = leading_T && r >= 3;
    batch = leading_T ? product(out.shape, 1, r - 2) : product(out.shape, 0, r - 2);  // per token when batch_T
    M = leading_T && r == 2 ? 0 : out.shape[r - 2].value;
    N = out.shape[r - 1].value;
    K = x[r - 1].value;
    m.trans_a = a->transposed;
    m.trans_b = b->transposed;
  }
  if (M >= (int64_t{1} << 31) || N >= (int64_t{1} << 31) || K >= (int64_t{1} << 31) || N == 0 || K == 0) return std::nullopt;
  m.a = a->slot;
  m.b = b->slot;
  m.batch = batch;
  m.M = M;
  m.N = N;
  m.K = K;

  // Every node after the product is its epilogue; a linear's bias is the epilogue's first add.
  for (size_t i = 0; i < mm; ++i)  // transposes feed the product and nothing else
    if (!ctx.slot_of(ctx.node(static_cast<int>(i)).result).empty()) return std::nullopt;
  const bool bias = node.operands.size() == 3;
  if (mm + 1 == ctx.size() && !bias) {
    m.c = ctx.slot_of(node.result);
    if (m.c.rfind("out", 0) != 0) return std::nullopt;
    return m;
  }
  VirtualLoad product_load{node.result, "workspace", ir::DType::kF32, bias ? node.operands[2] : ir::kNoValue};
  auto program = analyze_pointwise_tail(ctx, mm + 1, out.shape, {product_load});
  if (!program) return std::nullopt;
  // Vectors as wide as the program and the row length allow (the workspace and outputs are aligned).
  int vec = program->max_vector();
  while (vec > 1 && program->cols % vec != 0) vec /= 2;
  m.epilogue_vec = vec;
  m.out_dtype = program->stores.front().dtype;
  m.epilogue = std::move(program);
  return m;
}

void add_general_matmul_view(const GeneralMatmul& g, Match& m) {
  m.variant = "program";
  m.dtype = g.dtype;
  m.out_dtype = g.out_dtype;
  m.facts["trans_a"] = g.trans_a;
  m.facts["trans_b"] = g.trans_b;
  if (g.batch_T) m.facts["batch_T"] = 1;
  m.roles["a"] = g.a;
  m.roles["b"] = g.b;
  m.facts["batch"] = g.batch;
  m.facts["M"] = g.M;
  m.facts["N"] = g.N;
  m.facts["K"] = g.K;
  if (!g.epilogue) {
    m.roles["c"] = g.c;
    m.facts["epilogue"] = 0;
    return;
  }
  encode_row_program(*g.epilogue, m);
  m.facts["epilogue"] = 1;
  m.facts["epilogue_vec"] = g.epilogue_vec;
}

std::string WorkspaceAt::slot() const { return "workspace:" + std::to_string(per_token) + "+" + std::to_string(fixed); }

namespace {
int64_t round_up(int64_t bytes, int64_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }
}  // namespace

GeneralMatmulWorkspace general_matmul_workspace(const GeneralMatmul& g, bool split_tf32) {
  // Elements per token and fixed: the product [batch, M, N] (M may be T; with batch_T, [T * batch,
  // M, N]); A [batch, M, K]; B [batch, K, N] (a linear's weight: batch 1), per token only with batch_T.
  const bool a_per_token = g.M == 0 || g.batch_T;
  const int64_t product = g.batch * std::max<int64_t>(g.M, 1) * g.N;
  const int64_t a_elements = g.batch * std::max<int64_t>(g.M, 1) * g.K, b_elements = g.batch * g.K * g.N;
  GeneralMatmulWorkspace w;
  // Per-token buffers first (their offsets are per-token byte counts), then the fixed ones.
  std::vector<std::pair<int64_t, WorkspaceAt*>> per_token, fixed;
  if (g.epilogue) (a_per_token ? per_token : fixed).push_back({product * 4, &w.product});
  if (split_tf32) {
    w.a = SplitOperand{};
    w.b = SplitOperand{};
    (a_per_token ? w.a->per_token_elements : w.a->fixed_elements) = a_elements;
    (g.batch_T ? w.b->per_token_elements : w.b->fixed_elements) = b_elements;
    for (SplitOperand* op : {&*w.a, &*w.b})
      for (WorkspaceAt* at : {&op->hi, &op->lo})
        (op->per_token_elements ? per_token : fixed).push_back({(op->per_token_elements + op->fixed_elements) * 4, at});
  }
  for (auto& [bytes, at] : per_token) {
    at->per_token = w.per_token;
    w.per_token += round_up(bytes, 16);
  }
  for (auto& [bytes, at] : fixed) {
    at->per_token = w.per_token;
    at->fixed = w.fixed;
    w.fixed += round_up(bytes, 256);
  }
  return w;
}

std::vector<Launch> general_matmul_launches(const GeneralMatmul& g, const std::string& base, bool split_tf32) {
  const bool epilogue = g.epilogue.has_value();
  const GeneralMatmulWorkspace w = general_matmul_workspace(g, split_tf32);
  // The epilogue's row program reads the product at the workspace's start ("workspace:0").
  assert(w.product.per_token == 0 && w.product.fixed == 0);
  std::vector<Launch> out;
  auto gemm = [&](const std::string& a, const std::string& b, bool accumulate) {
    Launch l;
    l.kernel = "cublasGemmStridedBatchedEx";
    l.library = true;
    // Row-major operands as cuBLAS's column-major ones (library_calls.cpp): leading dims of the stored
    // matrices, and the elements between batches.
    l.library_args = {{"op", "gemm_batched"},
                      {"a", a},
                      {"b", b},
                      {"c", epilogue ? "workspace:0" : g.c},
                      {"m", g.M == 0 ? "T" : std::to_string(g.M)},
                      {"n", std::to_string(g.N)},
                      {"k", std::to_string(g.K)},
                      {"batch", g.batch_T ? (g.batch == 1 ? "T" : "T*" + std::to_string(g.batch)) : std::to_string(g.batch)},
                      {"trans_a", g.trans_a ? "1" : "0"},
                      {"trans_b", g.trans_b ? "1" : "0"},
                      {"ab_dtype", std::string(ir::dtype_name(g.dtype))},
                      {"c_dtype", epilogue ? "f32" : std::string(ir::dtype_name(g.dtype))}};
    if (split_tf32) l.library_args["compute"] = "tf32";
    if (accumulate) l.library_args["beta"] = "1";
    out.push_back(std::move(l));
  };
  if (split_tf32) {
    for (const auto& [suffix, op] : {std::pair{"_split_a", &*w.a}, std::pair{"_split_b", &*w.b}}) {
      Launch split;
      split.kernel = base + suffix;
      split.block_x = 256;
      const int64_t vec = general_matmul_split_vector(*op);
      split.grid_x = Extent{op->per_token_elements / vec, op->fixed_elements / vec, 256};
      out.push_back(std::move(split));
    }
    gemm(w.a->lo.slot(), w.b->hi.slot(), false);
    gemm(w.a->hi.slot(), w.b->lo.slot(), true);
    gemm(w.a->hi.slot(), w.b->hi.slot(), true);
  } else {
    gemm(g.a, g.b, false);
  }
  if (!epilogue) return out;
  const RowProgram& p = *g.epilogue;
  const int64_t vec = g.epilogue_vec;
  Launch program;
  program.kernel = base + "_program";
  program.block_x = 256;
  const int64_t per_row = p.cols / vec;
  program.grid_x = Extent{p.rows_per_token() * per_row, p.rows_fixed() * per_row, 256};
  out.push_back(std::move(program));
  return out;
}

int64_t general_matmul_split_vector(const SplitOperand& op) {
  return op.per_token_elements % 4 == 0 && op.fixed_elements % 4 == 0 ? 4 : 1;
}

}  // namespace agentcompile::plan
