// The library fallback for matmul regions: one cuBLAS GEMM per linear (cublasGemmEx, fp32 compute)
// followed, when the region has an epilogue, by a small generated elementwise kernel (bias, residual
// add, act(gate)·up with act SiLU or GELU) that reads the GEMM results. A region with an RMSNorm
// prologue first runs a generated RMSNorm kernel (rmsnorm.cuh, weights T or f32; with a residual-norm
// prologue gemv.cuh's residual_norm_rows, which also writes h) into the workspace, and the GEMMs read
// the row from there. Regions the fixed epilogues do not cover (a batched or
// transposed matmul, a linear with any pointwise epilogue) take the "program" variant
// (matmul_general.h): one strided-batched GEMM, then a generated row program over its fp32 product.
// Always in the space of a matmul region, and marked as its fallback: a generated kernel is selected
// only when it is measured faster. The record is in cublas.h; codegen/renderers/cublas.cpp writes
// the generated kernels.
#include "plan/families/cublas.h"

#include <sstream>

namespace agentcompile::plan {

namespace {

class CublasFamily final : public TypedFamily<CublasMatch, CublasConfig> {
 public:
  std::string name() const override { return "cublas"; }
  std::string template_file() const override { return "epilogue.cuh"; }
  bool library() const override { return true; }

  std::optional<CublasMatch> match(const RegionContext& ctx) const override {
    if (auto m = match_matmul_region(ctx, TokenCount::kAny)) {
      // cuBLAS reads plain weights; a quantized matmul's fallback is qgemv's conservative schedule
      // (no dequantize-to-f16 path yet).
      if (!weights_are_plain(*m)) return std::nullopt;
      const auto& x = ctx.function->type(ctx.node(0).operands[0]);
      return CublasMatch{std::move(*m), x.shape[0].is_static() ? x.shape[0].value : 0};  // 0: T
    }
    if (auto m = match_general_matmul(ctx)) return CublasMatch{std::move(*m), 0};
    return std::nullopt;
  }

  std::vector<Choice> param_space(const CublasMatch& m, const DeviceProfile&) const override {
    Choice c{CublasConfig(m)};
    c.score = 0.05;  // ranked last: the baseline every generated kernel must beat
    if (const GeneralMatmul* program = m.program())
      c.notes.push_back(std::string("library fallback: cublasGemmStridedBatchedEx, fp32 compute (no TF32)") +
                        (program->epilogue ? ", then the epilogue as a generated row program over the fp32 product" : ""));
    else
      c.notes.push_back("library fallback: cublasGemmEx per linear, fp32 compute");
    std::vector<Choice> out;
    out.push_back(std::move(c));
    return out;
  }

  std::string kernel_name(const CublasConfig& config) const override {
    std::ostringstream name;
    if (const GeneralMatmul* g = config.match.program()) {
      name << "cublas_mm_" << dtype_tag(g->dtype) << "_b" << (g->batch_T ? std::string("T") : std::to_string(g->batch)) << "_m"
           << (g->M ? std::to_string(g->M) : "T") << "_n" << g->N << "_k" << g->K << "_t" << g->trans_a << g->trans_b;
      if (g->epilogue) name << "_" << g->epilogue->ops_tag() << "_" << row_program_digest(config.match_view());
      return name.str();
    }
    // Rows are part of the name: the generated kernels differ between one static token and T.
    const MatmulMatch& m = *config.match.fixed();
    const int64_t rows = config.match.tokens_static;
    name << "cublas_" << matmul_prologue_tag(m) << matmul_epilogue_name(m.epilogue) << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_n" << m.N << "_k" << m.K << "_m" << (rows ? std::to_string(rows) : "T");
    return name.str();
  }

  std::vector<Launch> launches(const CublasConfig& config) const override {
    const std::string base = kernel_name(config);
    if (const GeneralMatmul* g = config.match.program()) return general_matmul_launches(*g, base);
    const MatmulMatch& m = *config.match.fixed();
    const int64_t tokens_static = config.match.tokens_static;
    const std::string tokens = tokens_static ? std::to_string(tokens_static) : "T";
    const int64_t rows = m.N;
    std::vector<Launch> out;
    std::string a = m.x;
    if (m.norm) {
      Launch norm;
      norm.kernel = base + "_rmsnorm";
      norm.block_x = kCublasNormThreads;
      norm.grid_x = tokens_static ? Extent{0, tokens_static, 1} : Extent{1, 0, 1};
      out.push_back(norm);
      a = "workspace:" + std::to_string(cublas_normalized_row_offset(m));
    }
    auto gemm = [&](const std::string& weight, const std::string& dest, int64_t n, const std::string& c_dtype) {
      Launch l;
      l.kernel = "cublasGemmEx";
      l.library = true;
      l.library_args = {{"op", "gemm"}, {"a", a}, {"b", weight}, {"c", dest}, {"m", tokens},
                        {"n", std::to_string(n)}, {"k", std::to_string(m.K)}, {"c_dtype", c_dtype}};
      out.push_back(l);
    };
    bool has_bias = false;
    for (const MatmulSegment& segment : m.segments) has_bias |= !segment.b.empty();
    if (m.epilogue == MatmulEpilogue::kGateUp) {
      // gate and up in fp32 into the workspace: [T, N] each.
      gemm(m.segments[0].w, "workspace:0", rows, "f32");
      gemm(m.segments[1].w, "workspace:" + std::to_string(rows * 4), rows, "f32");
    } else {
      for (const MatmulSegment& segment : m.segments) gemm(segment.w, segment.y, segment.rows, std::string(ir::dtype_name(m.out_dtype)));
    }
    if (m.epilogue == MatmulEpilogue::kGateUp || m.epilogue == MatmulEpilogue::kResidual || has_bias) {
      Launch epilogue;
      epilogue.kernel = base + "_epilogue";
      epilogue.block_x = 256;
      // One thread per output element of the widest segment set: ceil(T * N / 256) blocks.
      epilogue.grid_x = tokens_static ? Extent{0, tokens_static * rows, 256} : Extent{rows, 0, 256};
      out.push_back(epilogue);
    }
    return out;
  }

  // Per token: the fp32 gate and up results (gate_up), then the normalized row (a norm prologue).
  int64_t workspace_bytes_per_token(const CublasConfig& config) const override {
    if (const GeneralMatmul* g = config.match.program()) return general_matmul_workspace_per_token(*g);
    const MatmulMatch& m = *config.match.fixed();
    return cublas_normalized_row_offset(m) + (m.norm ? m.K * static_cast<int64_t>(ir::dtype_size(m.dtype)) : 0);
  }
  int64_t workspace_bytes_fixed(const CublasConfig& config) const override {
    const GeneralMatmul* g = config.match.program();
    return g ? general_matmul_workspace_fixed(*g) : 0;
  }
};

}  // namespace

int64_t cublas_normalized_row_offset(const MatmulMatch& m) { return m.epilogue == MatmulEpilogue::kGateUp ? 2 * m.N * 4 : 0; }

Match CublasConfig::match_view() const {
  Match m;
  if (const MatmulMatch* fixed = match.fixed()) {
    add_matmul_view(*fixed, m);
    m.facts["tokens_static"] = match.tokens_static;
  } else {
    add_general_matmul_view(*match.program(), m);
  }
  return m;
}

AC_REGISTER_FAMILY(cublas, 110, CublasFamily)

}  // namespace agentcompile::plan
