// Renders the generated kernels of a cuBLAS fallback candidate: the RMSNorm prologue
// (src/kernels/rmsnorm.cuh; with a residual-norm prologue gemv.cuh's residual_norm_rows, the GEMV
// prologue's arithmetic) and the fixed epilogue (src/kernels/epilogue.cuh), or a general
// epilogue's row program (src/kernels/elementwise.cuh); the GEMMs themselves are library calls with
// no source.
#include <sstream>

#include "codegen/render.h"
#include "codegen/renderers/renderers.h"
#include "codegen/renderers/row_program_code.h"
#include "plan/families/matmul_match.h"
#include "plan/families/row_program.h"

namespace agentcompile::codegen {

namespace {

// The RMSNorm prologue: each token's row of x, normalized, into the workspace the GEMMs read
// ("workspace:<offset per token>" in their library_args).
void render_norm_prologue(const plan::Candidate& c, const plan::Launch& launch, std::ostringstream& src) {
  const plan::Match& m = c.match;
  const std::string T = cuda_type(m.dtype);
  std::string offset = "0";
  for (const auto& l : c.launches)
    if (l.library) offset = l.library_args.at("a").substr(std::string("workspace:").size());
  const std::string rows = m.facts.at("tokens_static") ? std::to_string(m.facts.at("tokens_static")) : "a.T";
  const bool norm_f32 = m.facts.count("norm_f32") > 0;  // f32 norm weights
  const std::string W = norm_f32 ? "float" : T;
  if (m.facts.count("post_norm")) {  // the residual-norm prologue (gemv.cuh): one block per row, as many as rows
    src << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
        << "  ac::ResidualNormParams<" << T << (norm_f32 ? ", float" : "") << "> p;\n"
        << "  p.x = " << role_pointer(m, "x", T, true) << ";\n"
        << "  p.skip = " << role_pointer(m, "skip", T, true) << ";\n"
        << "  p.post_w = " << role_pointer(m, "post_w", W, true) << ";\n"
        << "  p.norm_w = " << role_pointer(m, "norm_w", W, true) << ";\n"
        << "  p.h = " << role_pointer(m, "h", T, false) << ";\n"
        << "  p.y = reinterpret_cast<" << T << "*>(static_cast<char*>(a.workspace) + static_cast<long long>(a.T) * " << offset << ");\n"
        << "  p.post_eps = " << float_literal(plan::matmul_post_norm_eps(m)) << ";\n"
        << "  p.norm_eps = " << float_literal(plan::matmul_norm_eps(m)) << ";\n"
        << "  p.K = " << m.facts.at("K") << ";\n"
        << "  ac::residual_norm_rows<" << T << ", " << W << ", " << launch.block_x << ", " << m.facts.at("K") << ">(p);\n}\n";
    return;
  }
  src << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
      << "  ac::RmsNormParams<" << T << (norm_f32 ? ", float" : "") << "> p;\n"
      << "  p.x = " << role_pointer(m, "x", T, true) << ";\n"
      << "  p.w = " << role_pointer(m, "norm_w", norm_f32 ? "float" : T, true) << ";\n"
      << "  p.y = reinterpret_cast<" << T << "*>(static_cast<char*>(a.workspace) + static_cast<long long>(a.T) * " << offset << ");\n"
      << "  p.rows = " << rows << ";\n"
      << "  p.eps = " << float_literal(plan::matmul_norm_eps(m)) << ";\n"
      << "  ac::rmsnorm<" << T << ", " << m.facts.at("K") << ", " << launch.block_x << ", 8, 1>(p);\n}\n";
}

void render_epilogue(const plan::Candidate& c, const std::string& name, std::ostringstream& src) {
  const plan::Match& m = c.match;
  const std::string T = cuda_type(m.dtype), O = cuda_type(m.out_dtype);
  const bool gate_up = m.variant == "gate_up";
  const char* kind = gate_up ? "ac::kEpilogueGateUp" : m.variant == "residual" ? "ac::kEpilogueResidual" : "ac::kEpilogueBias";
  src << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "(const ac::RegionArgs a) {\n"
      << "  ac::EpilogueParams<" << T << ", " << O << "> p;\n";
  for (int s = 0; s < 3; ++s) {
    const std::string i = std::to_string(s);
    const bool has = m.facts.count("rows" + i) > 0 && (!gate_up || s == 0);
    src << "  p.y[" << i << "] = " << (has ? role_pointer(m, "y" + i, O, false) : "nullptr") << ";\n"
        << "  p.bias[" << i << "] = " << (m.facts.count("rows" + i) ? role_pointer(m, "b" + i, T, true) : "nullptr") << ";\n"
        << "  p.rows[" << i << "] = " << (gate_up ? (s == 0 ? std::to_string(m.facts.at("N")) : "0")
                                                  : (m.facts.count("rows" + i) ? std::to_string(m.facts.at("rows" + i)) : "0"))
        << ";\n";
  }
  const int64_t n = m.facts.at("N");
  src << "  p.residual = " << role_pointer(m, "residual", T, true) << ";\n"
      << "  p.gate = " << (gate_up ? "static_cast<const float*>(a.workspace)" : "nullptr") << ";\n"
      << "  p.up = " << (gate_up ? "static_cast<const float*>(a.workspace) + static_cast<long long>(a.T) * " + std::to_string(n) : "nullptr")
      << ";\n"
      << "  p.elements = static_cast<long long>(" << (m.facts.at("tokens_static") ? std::to_string(m.facts.at("tokens_static")) : "a.T")
      << ") * " << n << ";\n"
      << "  ac::epilogue<" << T << ", " << O << ", " << kind
      << (plan::matmul_gate_activation(m) != plan::GateActivation::kSilu ? ", " + plan::matmul_gate_activation_code(m) : "") << ">(p);\n}\n";
}

// A general epilogue: the row program over the GEMM's fp32 product (the workspace), one elementwise pass.
void render_program_epilogue(const plan::Candidate& c, const plan::Launch& launch, std::ostringstream& src) {
  const plan::RowProgram p = plan::decode_row_program(c.match);
  const int vec = static_cast<int>(c.match.facts.at("epilogue_vec"));
  src << render_row_program(p, vec) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
      << "  Program prog;\n"
      << render_program_binding(p, "prog")
      << "  ac::elementwise<" << p.cols << ", " << vec << ", " << launch.block_x << ", 1>(prog, "
      << rows_expression(p.rows_per_token(), p.rows_fixed()) << ");\n}\n";
}

}  // namespace

std::string render_cublas_epilogue(const plan::Candidate& c) {
  std::string first;
  for (const auto& launch : c.launches)
    if (!launch.library && first.empty()) first = launch.kernel;
  std::ostringstream src;
  src << "// " << first << ": generated by agentcompile around cuBLAS GEMMs (rmsnorm.cuh, epilogue.cuh"
      << (c.match.facts.count("post_norm") ? ", gemv.cuh" : "") << ")\n"
      << "#include \"common.cuh\"\n" << (c.match.variant == "program" ? "#include \"elementwise.cuh\"\n" : "")
      << "#include \"epilogue.cuh\"\n#include \"rmsnorm.cuh\"\n" << (c.match.facts.count("post_norm") ? "#include \"gemv.cuh\"\n" : "") << "\n";
  for (const auto& launch : c.launches) {
    if (launch.library) continue;
    if (launch.kernel.ends_with("_program"))
      render_program_epilogue(c, launch, src);
    else if (launch.kernel.ends_with("_rmsnorm"))
      render_norm_prologue(c, launch, src);
    else
      render_epilogue(c, launch.kernel, src);
  }
  return src.str();
}

}  // namespace agentcompile::codegen
