// Renders the generated kernels of a cuBLAS fallback candidate: quantized weights dequantized into
// the workspace (src/kernels/dequant.cuh), the RMSNorm prologue
// (src/kernels/rmsnorm.cuh; with a residual-norm prologue gemv.cuh's residual_norm_rows, the GEMV
// prologue's arithmetic) and the fixed epilogue (src/kernels/epilogue.cuh), or a general
// epilogue's row program (src/kernels/elementwise.cuh), and a 3xTF32 matmul's operand splits
// (src/kernels/split_tf32.cuh); the GEMMs themselves are library calls with no source.
#include <sstream>

#include "codegen/render.h"
#include "codegen/renderers/renderer.h"
#include "codegen/renderers/row_program_code.h"
#include "ir/quant.h"
#include "plan/families/cublas.h"
#include "plan/families/qgemv.h"

namespace agentcompile::codegen {

namespace {

// The RMSNorm prologue: each token's row of x, normalized, into the workspace the GEMMs read
// ("workspace:<offset per token>" in their library_args).
void render_norm_prologue(const plan::CublasMatch& c, const plan::Launch& launch, std::ostringstream& src) {
  const plan::MatmulMatch& m = *c.fixed();
  const std::string T = cuda_type(m.dtype);
  const std::string offset = std::to_string(plan::cublas_normalized_row_offset(m));
  const std::string rows = c.tokens_static ? std::to_string(c.tokens_static) : "a.T";
  const std::string W = m.norm_f32 ? "float" : T;  // f32 norm weights
  const std::string params_args = m.norm_f32 ? template_args({{"T", T}, {"W", "float"}}) : template_args({{"T", T}});
  if (const auto& post = m.residual_norm) {  // the residual-norm prologue (gemv.cuh): one block per row, as many as rows
    src << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
        << "  ac::ResidualNormParams<" << params_args << "> p;\n"
        << "  p.x = " << slot_pointer(m.x, T, true) << ";\n"
        << "  p.skip = " << slot_pointer(post->skip, T, true) << ";\n"
        << "  p.post_w = " << slot_pointer(post->post_w, W, true) << ";\n"
        << "  p.norm_w = " << slot_pointer(m.norm->w, W, true) << ";\n"
        << "  p.h = " << slot_pointer(post->h, T, false) << ";\n"
        << "  p.y = reinterpret_cast<" << T << "*>(static_cast<char*>(a.workspace) + static_cast<long long>(a.T) * " << offset << ");\n"
        << "  p.post_eps = " << float_literal(post->eps) << ";\n"
        << "  p.norm_eps = " << float_literal(m.norm->eps) << ";\n"
        << "  p.K = " << m.K << ";\n"
        << "  ac::residual_norm_rows<" << template_args({{"T", T}, {"W", W}, {"THREADS", launch.block_x}, {"KMAX", m.K}}) << ">(p);\n}\n";
    return;
  }
  src << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
      << "  ac::RmsNormParams<" << params_args << "> p;\n"
      << "  p.x = " << slot_pointer(m.x, T, true) << ";\n"
      << "  p.w = " << slot_pointer(m.norm->w, W, true) << ";\n"
      << "  p.y = reinterpret_cast<" << T << "*>(static_cast<char*>(a.workspace) + static_cast<long long>(a.T) * " << offset << ");\n"
      << "  p.rows = " << rows << ";\n"
      << "  p.eps = " << float_literal(m.norm->eps) << ";\n"
      << "  ac::rmsnorm<" << template_args({{"T", T}, {"H", m.K}, {"TPR", launch.block_x}, {"VEC", "8"}, {"ROWS", "1"}}) << ">(p);\n}\n";
}

// A quantized linear's weight rows, dequantized to x's dtype into the workspace's fixed part (after
// the per-token part), where its GEMM reads them.
void render_dequantize(const plan::CublasMatch& c, const plan::Launch& launch, size_t segment, std::ostringstream& src) {
  const plan::MatmulMatch& m = *c.fixed();
  const ir::QuantLayout layout = ir::quant_layout(m.w_dtype);
  const std::string T = cuda_type(m.dtype);
  const char* format = plan::qgemv_format_code(m.w_dtype);
  src << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
      << "  ac::DequantizeParams<" << template_args({{"T", T}}) << "> p;\n"
      << "  p.w = " << slot_pointer(m.segments[segment].w, "unsigned char", true) << ";  // " << ir::dtype_name(m.w_dtype) << " rows\n"
      << "  p.out = reinterpret_cast<" << T << "*>(static_cast<char*>(a.workspace) + static_cast<long long>(a.T) * "
      << plan::cublas_per_token_bytes(m) << " + " << plan::cublas_dequantized_offset(m, segment) << ");\n"
      << "  p.rows = " << m.segments[segment].rows << ";\n"
      << "  p.K = " << m.K << ";\n"
      << "  ac::dequantize_rows<"
      << template_args({{"T", T}, {"S", cuda_type(layout.scale)}, {"FORMAT", format}, {"G", layout.group > 0 ? layout.group : 32},
                        {"ROW_BYTES", ir::row_bytes(m.w_dtype, m.K)}, {"THREADS", launch.block_x}})
      << ">(p);\n}\n";
}

void render_epilogue(const plan::CublasMatch& c, const std::string& name, std::ostringstream& src) {
  const plan::MatmulMatch& m = *c.fixed();
  const std::string T = cuda_type(m.dtype), O = cuda_type(m.out_dtype);
  const bool gate_up = m.epilogue == plan::MatmulEpilogue::kGateUp;
  const char* kind = gate_up ? "ac::kEpilogueGateUp" : m.epilogue == plan::MatmulEpilogue::kResidual ? "ac::kEpilogueResidual" : "ac::kEpilogueBias";
  src << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "(const ac::RegionArgs a) {\n"
      << "  ac::EpilogueParams<" << template_args({{"T", T}, {"OutT", O}}) << "> p;\n";
  const bool fp32_products = plan::cublas_bias_in_fp32(m);
  int64_t offset = 0;  // of a segment's fp32 product in the workspace, bytes per token
  for (size_t s = 0; s < 3; ++s) {
    const std::string i = std::to_string(s);
    const plan::MatmulSegment segment = s < m.segments.size() ? m.segments[s] : plan::MatmulSegment{};
    src << "  p.y[" << i << "] = " << (!gate_up || s == 0 ? slot_pointer(segment.y, O, false) : "nullptr") << ";\n";
    if (fp32_products)  // (otherwise null, the default)
      src << "  p.acc[" << i << "] = "
          << (s < m.segments.size() ? "reinterpret_cast<const float*>(static_cast<const char*>(a.workspace) + static_cast<long long>(a.T) * " +
                                          std::to_string(offset) + ")"
                                    : "nullptr")
          << ";\n";
    offset += segment.rows * 4;
    src << "  p.bias[" << i << "] = " << slot_pointer(segment.b, T, true) << ";\n"
        << "  p.rows[" << i << "] = " << (gate_up ? (s == 0 ? std::to_string(m.N) : "0") : std::to_string(segment.rows)) << ";\n";
  }
  const int64_t n = m.N;
  std::vector<TemplateArg> args = {{"T", T}, {"OutT", O}, {"KIND", kind}};
  if (m.gate_act != plan::GateActivation::kSilu) args.push_back({"ACT", plan::matmul_gate_activation_code(m.gate_act)});
  src << "  p.residual = " << slot_pointer(m.residual, T, true) << ";\n"
      << "  p.gate = " << (gate_up ? "static_cast<const float*>(a.workspace)" : "nullptr") << ";\n"
      << "  p.up = " << (gate_up ? "static_cast<const float*>(a.workspace) + static_cast<long long>(a.T) * " + std::to_string(n) : "nullptr")
      << ";\n"
      << "  p.elements = static_cast<long long>(" << (c.tokens_static ? std::to_string(c.tokens_static) : "a.T") << ") * " << n << ";\n"
      << "  ac::epilogue<" << template_args(args) << ">(p);\n}\n";
}

// A general epilogue: the row program over the GEMM's fp32 product (the workspace), one elementwise pass.
void render_program_epilogue(const plan::GeneralMatmul& g, const plan::Launch& launch, std::ostringstream& src) {
  const plan::RowProgram& p = *g.epilogue;
  const int vec = g.epilogue_vec;
  src << render_row_program(p, vec) << "\n"
      << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
      << "  Program prog;\n"
      << render_program_binding(p, "prog")
      << "  ac::elementwise<" << template_args({{"COLS", p.cols}, {"VEC", vec}, {"THREADS", launch.block_x}, {"UNROLL", "1"}}) << ">(prog, "
      << rows_expression(p.rows_per_token(), p.rows_fixed()) << ");\n}\n";
}

// One fp32 operand of a 3xTF32 matmul split into its TF32 high part and residual (split_tf32.cuh), in
// the workspace where the TF32 GEMMs read them.
void render_split(const plan::CublasConfig& config, const plan::Launch& launch, std::ostringstream& src) {
  const plan::GeneralMatmul& g = *config.match.program();
  const bool a_side = launch.kernel.ends_with("_split_a");
  const plan::GeneralMatmulWorkspace w = plan::general_matmul_workspace(g, true);
  const plan::SplitOperand& op = a_side ? *w.a : *w.b;
  const int64_t vec = plan::general_matmul_split_vector(op);
  auto at = [](const plan::WorkspaceAt& buffer) {
    return "reinterpret_cast<float*>(static_cast<char*>(a.workspace) + static_cast<long long>(a.T) * " + std::to_string(buffer.per_token) +
           " + " + std::to_string(buffer.fixed) + "LL)";
  };
  src << "extern \"C\" __global__ void __launch_bounds__(" << launch.block_x << ") " << launch.kernel << "(const ac::RegionArgs a) {\n"
      << "  const long long vectors = (static_cast<long long>(a.T) * " << op.per_token_elements << "LL + " << op.fixed_elements << "LL) / "
      << vec << ";\n"
      << "  ac::split_tf32<" << template_args({{"VEC", vec}}) << ">(" << slot_pointer(a_side ? g.a : g.b, "float", true) << ", " << at(op.hi) << ", " << at(op.lo)
      << ", vectors);\n}\n";
}

std::string render_cublas(const plan::CublasConfig& config, const std::vector<plan::Launch>& launches) {
  const plan::CublasMatch& c = config.match;
  const bool post_norm = c.fixed() && c.fixed()->residual_norm;
  const bool quantized = c.fixed() && !plan::weights_are_plain(*c.fixed());
  std::string first;
  for (const auto& launch : launches)
    if (!launch.library && first.empty()) first = launch.kernel;
  std::ostringstream src;
  src << "// " << first << ": generated by agentcompile around cuBLAS GEMMs (rmsnorm.cuh, epilogue.cuh" << (post_norm ? ", gemv.cuh" : "")
      << (quantized ? ", dequant.cuh" : "") << ")\n"
      << "#include \"common.cuh\"\n" << (quantized ? "#include \"dequant.cuh\"\n" : "") << (c.program() ? "#include \"elementwise.cuh\"\n" : "")
      << (config.split_tf32 ? "#include \"split_tf32.cuh\"\n" : "")
      << "#include \"epilogue.cuh\"\n#include \"rmsnorm.cuh\"\n" << (post_norm ? "#include \"gemv.cuh\"\n" : "") << "\n";
  for (const auto& launch : launches) {
    if (launch.library) continue;
    if (c.program() && (launch.kernel.ends_with("_split_a") || launch.kernel.ends_with("_split_b")))
      render_split(config, launch, src);
    else if (c.program())
      render_program_epilogue(*c.program(), launch, src);
    else if (launch.kernel.ends_with("_rmsnorm"))
      render_norm_prologue(c, launch, src);
    else if (const size_t at = launch.kernel.rfind("_dequant"); quantized && at != std::string::npos)
      render_dequantize(c, launch, static_cast<size_t>(std::stoul(launch.kernel.substr(at + 8))), src);
    else
      render_epilogue(c, launch.kernel, src);
  }
  return src.str();
}

}  // namespace

AC_REGISTER_RENDERER(cublas, plan::CublasConfig, render_cublas, ProducerWait::kInserted)

}  // namespace agentcompile::codegen
