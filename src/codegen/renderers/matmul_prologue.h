// The source lines that bind a GEMV-like kernel's norm prologues (RMSNorm, and the residual-norm that
// writes h = skip + post-norm(x)) to the region's slots: the f16 GEMV and the quantized GEMV spell the
// same parameters of their shared prologue; and the segments the f16 and batched GEMVs spell alike.
#pragma once

#include <string>

#include "codegen/render.h"
#include "plan/families/matmul_match.h"

namespace agentcompile::codegen {

// `T` the activations' type, `W` the norm weights'; `p` is the kernel's params variable.
inline std::string matmul_prologue_bindings(const plan::MatmulMatch& m, const std::string& T, const std::string& W) {
  return "  p.norm_w = " + slot_pointer(m.norm ? m.norm->w : "", W, true) + ";  // [K] RMSNorm prologue\n" +
         "  p.norm_eps = " + float_literal(m.norm ? m.norm->eps : 0.f) + ";\n" +
         "  p.skip = " + slot_pointer(m.residual_norm ? m.residual_norm->skip : "", T, true) +
         ";  // [K] residual-norm prologue: h = skip + post-norm(x)\n" +
         "  p.post_w = " + slot_pointer(m.residual_norm ? m.residual_norm->post_w : "", W, true) + ";  // [K]\n" +
         "  p.post_eps = " + float_literal(m.residual_norm ? m.residual_norm->eps : 0.f) + ";\n" +
         "  p.h = " + slot_pointer(m.residual_norm ? m.residual_norm->h : "", T, false) + ";  // [K]\n";
}

// The segments' weights, biases, outputs and rows of gemv.cuh's parameters (GemvParams, GemvBatchParams:
// three of each; gate_up's rows all in segment 0, its up product consumed by the epilogue).
inline std::string matmul_segment_bindings(const plan::MatmulMatch& m, const std::string& T, const std::string& O) {
  const bool gate_up = m.epilogue == plan::MatmulEpilogue::kGateUp;
  std::string out;
  for (size_t s = 0; s < 3; ++s) {
    const std::string i = std::to_string(s);
    const plan::MatmulSegment segment = s < m.segments.size() ? m.segments[s] : plan::MatmulSegment{};
    const std::string rows = gate_up ? (s == 0 ? std::to_string(m.N) : "0") : std::to_string(segment.rows);
    out += "  p.w[" + i + "] = " + slot_pointer(segment.w, T, true) + ";\n" +
           "  p.bias[" + i + "] = " + slot_pointer(segment.b, T, true) + ";\n" +
           "  p.y[" + i + "] = " + (!gate_up || s == 0 ? slot_pointer(segment.y, O, false) : "nullptr") + ";\n" +
           "  p.rows[" + i + "] = " + rows + ";\n";
  }
  return out;
}

}  // namespace agentcompile::codegen
