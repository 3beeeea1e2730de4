// Small IR modules whose regions the row-wise families must implement but the Llama/Qwen graphs do
// not contain: fused residual + rmsnorm, softmax, reductions and broadcasting pointwise chains.
// Shared by tests/unit/rowwise_families_test.cpp (matching, NVRTC) and
// tests/gpu/rowwise_admission_test.cpp (validation against the interpreter).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace agentcompile::testing {

struct RowwiseModule {
  std::string name;
  std::string family;  // the family that must match its (single) region
  ir::Module module;   // function "f"
};

inline ir::TensorType tensor(ir::DType dtype, std::vector<ir::Dim> shape) { return ir::TensorType{dtype, std::move(shape)}; }

// Builds module `name` with function "f"; `body` adds the ops and results. Weights named "*norm*"
// get values near 1 in admission cases (tune/region_cases.cpp), others N(0, 0.1).
inline RowwiseModule rowwise_module(const std::string& name, const std::string& family,
                                    std::vector<ir::ParamDecl> params,
                                    const std::function<void(ir::FunctionBuilder&)>& body) {
  RowwiseModule m;
  m.name = name;
  m.family = family;
  m.module.name = name;
  m.module.params = std::move(params);
  ir::FunctionBuilder b(m.module, "f");
  body(b);
  if (!b.finish()) m.module.functions.clear();  // the test reports the empty module
  return m;
}

inline std::vector<RowwiseModule> rowwise_modules() {
  using ir::Dim;
  using ir::DType;
  using ir::OpKind;
  const Dim T = Dim::T();
  auto d = [](int64_t v) { return Dim::of(v); };
  std::vector<RowwiseModule> out;

  // Residual add + rmsnorm writing both the sum and the normed rows (bf16, H = 2048).
  out.push_back(rowwise_module("add_rmsnorm", "rmsnorm", {{"ln.norm.weight", tensor(DType::kBF16, {d(2048)})}},
                               [&](ir::FunctionBuilder& b) {
                                 auto x = b.arg("x", tensor(DType::kBF16, {T, d(2048)}));
                                 auto r = b.arg("residual", tensor(DType::kBF16, {T, d(2048)}));
                                 auto sum = b.op(OpKind::kAdd, {x, r});  // [T, 2048]
                                 b.result(sum);
                                 b.result(b.op(OpKind::kRmsNorm, {sum, b.weight("ln.norm.weight")}, {{"eps", 1e-6}}));
                               }));
  // rmsnorm of [T, 8, 128] heads, gated by silu(g), written as f32 (f16 in).
  out.push_back(rowwise_module("rmsnorm_gate_f32", "rmsnorm", {{"q.norm.weight", tensor(DType::kF16, {d(128)})}},
                               [&](ir::FunctionBuilder& b) {
                                 auto x = b.arg("x", tensor(DType::kF16, {T, d(8), d(128)}));
                                 auto g = b.arg("g", tensor(DType::kF16, {T, d(8), d(128)}));
                                 auto n = b.op(OpKind::kRmsNorm, {x, b.weight("q.norm.weight")}, {{"eps", 1e-5}});
                                 auto y = b.op(OpKind::kMul, {n, b.op(OpKind::kSilu, {g})});
                                 b.result(b.op(OpKind::kCast, {y}, {{"dtype", std::string("f32")}}));
                               }));
  // Scaled, masked softmax over [T, 16, 256]: the mask [T, 1, 256] broadcasts over heads.
  out.push_back(rowwise_module("masked_softmax", "softmax", {{"scale", tensor(DType::kF16, {d(1)})}},
                               [&](ir::FunctionBuilder& b) {
                                 auto x = b.arg("scores", tensor(DType::kF16, {T, d(16), d(256)}));
                                 auto mask = b.arg("mask", tensor(DType::kF16, {T, d(1), d(256)}));
                                 auto s = b.op(OpKind::kAdd, {b.op(OpKind::kMul, {x, b.weight("scale")}), mask});
                                 b.result(b.op(OpKind::kSoftmax, {s}, {{"axis", int64_t{-1}}}));
                               }));
  // Softmax over a vocabulary row (f32, too long for registers: streamed).
  out.push_back(rowwise_module("vocab_softmax", "softmax", {}, [&](ir::FunctionBuilder& b) {
    auto x = b.arg("logits", tensor(DType::kF32, {d(1), d(32000)}));
    b.result(b.op(OpKind::kSoftmax, {x}, {{"axis", int64_t{1}}}));
  }));
  // Sum of exp over rows, kept as [T, 1] f32.
  out.push_back(rowwise_module("sum_exp", "reduction", {}, [&](ir::FunctionBuilder& b) {
    auto x = b.arg("x", tensor(DType::kBF16, {T, d(1024)}));
    auto e = b.op(OpKind::kCast, {b.op(OpKind::kExp, {x})}, {{"dtype", std::string("f32")}});
    b.result(b.op(OpKind::kReduceSum, {e}, {{"axis", int64_t{-1}}, {"keepdim", int64_t{1}}}));
  }));
  // Mean and max of rows (two regions: each is a row op of its own).
  out.push_back(rowwise_module("mean_rows", "reduction", {}, [&](ir::FunctionBuilder& b) {
    auto x = b.arg("x", tensor(DType::kF16, {T, d(4096)}));
    b.result(b.op(OpKind::kReduceMean, {b.op(OpKind::kNeg, {x})}, {{"axis", int64_t{-1}}}));
  }));
  out.push_back(rowwise_module("max_rows", "reduction", {}, [&](ir::FunctionBuilder& b) {
    auto x = b.arg("x", tensor(DType::kF32, {T, d(4), d(96)}));
    b.result(b.op(OpKind::kReduceMax, {x}, {{"axis", int64_t{2}}}));
  }));
  // Greedy sampling: argmax of biased f32 logits over a vocabulary, one long row.
  out.push_back(rowwise_module("argmax_vocab", "reduction", {{"bias", tensor(DType::kF32, {d(151936)})}},
                               [&](ir::FunctionBuilder& b) {
                                 auto x = b.arg("logits", tensor(DType::kF32, {d(1), d(151936)}));
                                 b.result(b.op(OpKind::kArgmax, {b.op(OpKind::kAdd, {x, b.weight("bias")})}, {{"axis", int64_t{-1}}}));
                               }));
  // bf16 rows have many ties: the lowest index wins.
  out.push_back(rowwise_module("argmax_bf16", "reduction", {}, [&](ir::FunctionBuilder& b) {
    auto x = b.arg("x", tensor(DType::kBF16, {T, d(1000)}));
    b.result(b.op(OpKind::kArgmax, {x}, {{"axis", int64_t{-1}}}));
  }));
  // SwiGLU activation: silu(gate) * up.
  out.push_back(rowwise_module("silu_mul", "elementwise", {}, [&](ir::FunctionBuilder& b) {
    auto g = b.arg("gate", tensor(DType::kBF16, {T, d(8192)}));
    auto u = b.arg("up", tensor(DType::kBF16, {T, d(8192)}));
    b.result(b.op(OpKind::kMul, {b.op(OpKind::kSilu, {g}), u}));
  }));
  // Bias add and residual with a [T, 1] per-row scale, two outputs (f16) and an f32 copy.
  out.push_back(rowwise_module("bias_scale", "elementwise", {{"bias", tensor(DType::kF16, {d(2048)})}},
                               [&](ir::FunctionBuilder& b) {
                                 auto x = b.arg("x", tensor(DType::kF16, {T, d(2048)}));
                                 auto s = b.arg("row_scale", tensor(DType::kF16, {T, d(1)}));
                                 auto r = b.arg("residual", tensor(DType::kF16, {T, d(2048)}));
                                 auto y = b.op(OpKind::kAdd, {b.op(OpKind::kMul, {b.op(OpKind::kAdd, {x, b.weight("bias")}), s}), r});
                                 b.result(y);
                                 b.result(b.op(OpKind::kCast, {b.op(OpKind::kNeg, {y})}, {{"dtype", std::string("f32")}}));
                               }));
  // Partial broadcast: [T, 4, 64] against a per-head [4, 1] weight, with sub, div and exp.
  out.push_back(rowwise_module("head_broadcast", "elementwise", {{"head.norm.weight", tensor(DType::kF32, {d(4), d(1)})}},
                               [&](ir::FunctionBuilder& b) {
                                 auto x = b.arg("x", tensor(DType::kF32, {T, d(4), d(64)}));
                                 auto y = b.arg("y", tensor(DType::kF32, {T, d(4), d(64)}));
                                 auto w = b.weight("head.norm.weight");
                                 auto q = b.op(OpKind::kDiv, {b.op(OpKind::kSub, {x, y}), w});
                                 b.result(b.op(OpKind::kMul, {q, b.op(OpKind::kExp, {b.op(OpKind::kNeg, {w})})}));
                               }));
  // An odd row length (1001 columns): only scalar accesses fit.
  out.push_back(rowwise_module("odd_cols", "elementwise", {}, [&](ir::FunctionBuilder& b) {
    auto x = b.arg("x", tensor(DType::kBF16, {T, d(1001)}));
    b.result(b.op(OpKind::kSilu, {x}));
  }));
  return out;
}

}  // namespace agentcompile::testing
