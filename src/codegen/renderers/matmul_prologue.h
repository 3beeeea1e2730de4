// The source lines that bind a GEMV-like kernel's norm prologues (RMSNorm, and the residual-norm that
// writes h = skip + post-norm(x)) to the region's slots: the f16 GEMV and the quantized GEMV spell the
// same parameters of their shared prologue.
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

}  // namespace agentcompile::codegen
