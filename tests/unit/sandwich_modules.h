// Small Gemma-like graphs for the residual-norm prologue (analysis/regions.h): the sandwich norms of a
// decoder layer's tail, written in the IR's text form. One function `decode` (or `prefill` with T
// rows) over the residual stream %x and an attention output %o ([rows, K] each):
//   h  = x + post_attn(o)                         the post-norm and its residual add
//   m  = gelu_tanh(gate(pre_ff(h))) * up(pre_ff(h))  a norm prologue and a gated epilogue
//   d  = down(m)
//   h2 = post_ff(d) + h                           the add's operands the other way round
//   q, k = q_proj(final(h2)), k_proj(final(h2))   a norm prologue and two linears ("multi")
// returning m, q and k: h is read by the second add (an output of its region), h2 only by the final
// norm (internal). With `casts` every norm runs in f32 between casts (cast(x) -> rmsnorm -> cast
// back), as analysis/recognize raises a captured Gemma-3; with `norm_f32` the norm weights are f32.
// Shared by tests/unit/residual_norm_prologue_test.cpp and tests/gpu/residual_norm_admission_test.cpp.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "ir/dtype.h"

namespace agentcompile::testing {

struct SandwichShape {
  ir::DType dtype = ir::DType::kF16;
  int64_t K = 1152;     // hidden size
  int64_t N = 256;      // gate/up rows and q rows (k: 64 rows)
  bool norm_f32 = true;  // f32 norm weights (Gemma's 1 + w)
  bool casts = true;     // norms in f32 between casts
  std::string rows = "1";
};

inline std::string sandwich_module(const SandwichShape& s) {
  const std::string dt(ir::dtype_name(s.dtype)), wt = s.norm_f32 ? "f32" : dt;
  const std::string K = std::to_string(s.K), N = std::to_string(s.N);
  auto act = [&](const std::string& n) { return dt + "[" + s.rows + ", " + n + "]"; };
  std::ostringstream out;
  out << "module sandwich {\n";
  for (const char* norm : {"post_attn", "pre_ff", "post_ff", "final"}) out << "  param @" << norm << ".weight : " << wt << "[" << K << "]\n";
  out << "  param @gate.weight : " << dt << "[" << N << ", " << K << "]\n"
      << "  param @up.weight : " << dt << "[" << N << ", " << K << "]\n"
      << "  param @down.weight : " << dt << "[" << K << ", " << N << "]\n"
      << "  param @q_proj.weight : " << dt << "[" << N << ", " << K << "]\n"
      << "  param @k_proj.weight : " << dt << "[64, " << K << "]\n";
  out << "  func @" << (s.rows == "1" ? "decode" : "prefill") << "(%x: " << act(K) << ", %o: " << act(K) << ") -> (" << act(N) << ", "
      << act(N) << ", " << act("64") << ") {\n";
  auto emit = [&](const std::string& name, const std::string& text, const std::string& type) {
    out << "    %" << name << " = " << text << " : " << type << "\n";
    return "%" + name;
  };
  auto weight = [&](const std::string& name, const std::string& type) { return emit(name + "_w", "weight {name = \"" + name + ".weight\"}", type); };
  auto norm = [&](const std::string& name, const std::string& x) {
    const std::string w = weight(name, wt + "[" + K + "]");
    if (!s.casts) return emit(name, "rmsnorm(" + x + ", " + w + ") {eps = 1e-06}", act(K));
    const std::string f32 = "f32[" + s.rows + ", " + K + "]";
    const std::string x32 = emit(name + "_in", "cast(" + x + ") {dtype = \"f32\"}", f32);
    const std::string y32 = emit(name + "_f32", "rmsnorm(" + x32 + ", " + w + ") {eps = 1e-06}", f32);
    return emit(name, "cast(" + y32 + ") {dtype = \"" + dt + "\"}", act(K));
  };
  auto linear = [&](const std::string& name, const std::string& x, const std::string& out_rows, const std::string& in_rows) {
    const std::string w = weight(name, dt + "[" + out_rows + ", " + in_rows + "]");
    return emit(name, "linear(" + x + ", " + w + ")", act(out_rows));
  };
  const std::string h = emit("h", "add(%x, " + norm("post_attn", "%o") + ")", act(K));
  const std::string pre = norm("pre_ff", h);
  const std::string gate = linear("gate", pre, N, K), up = linear("up", pre, N, K);
  const std::string gelu = emit("gelu", "gelu(" + gate + ") {approximate = \"tanh\"}", act(N));
  const std::string m = emit("m", "mul(" + gelu + ", " + up + ")", act(N));
  const std::string d = linear("down", m, K, N);
  const std::string h2 = emit("h2", "add(" + norm("post_ff", d) + ", " + h + ")", act(K));
  const std::string fin = norm("final", h2);
  const std::string q = linear("q_proj", fin, N, K), k = linear("k_proj", fin, "64", K);
  out << "    return " << m << ", " << q << ", " << k << "\n  }\n}\n";
  return out.str();
}

}  // namespace agentcompile::testing
