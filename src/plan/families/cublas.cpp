// The library fallback for matmul regions: one cuBLAS GEMM per linear (cublasGemmEx, fp32 compute)
// followed, when the region has an epilogue, by a small generated elementwise kernel (bias, residual
// add, act(gate)·up with act SiLU or GELU) that reads the GEMM results. A region with an RMSNorm
// prologue first runs a generated RMSNorm kernel (rmsnorm.cuh, weights T or f32; with a residual-norm
// prologue gemv.cuh's residual_norm_rows, which also writes h) into the workspace, and the GEMMs read
// the row from there. Regions the fixed epilogues do not cover (a batched or
// transposed matmul, a linear with any pointwise epilogue) take the "program" variant
// (matmul_general.h): one strided-batched GEMM, then a generated row program over its fp32 product.
// Quantized weights (int8 per channel, int4 groups: ir/quant.h) are first dequantized to x's dtype
// by a generated kernel per linear (dequant.cuh) into the workspace, which the GEMMs read.
// Always in the space of a matmul region, and marked as its fallback: a generated kernel is selected
// only when it is measured faster. An fp32 general matmul bound by its FLOPs also gets the 3xTF32
// candidate (not a fallback): its operands split by generated kernels (split_tf32.cuh), then three TF32
// GEMMs (matmul_general.h); a plain fp32 linear takes the general form for it. The record is in
// cublas.h; codegen/renderers/cublas.cpp writes the generated kernels.
#include "plan/families/cublas.h"

#include <sstream>

#include "ir/quant.h"
#include "plan/families/qgemv.h"

namespace agentcompile::plan {

namespace {

// Whether 3xTF32 can beat the fp32 GEMM: only where that GEMM is bound by its FLOPs. At 64 FLOPs per byte
// of A, B and C (fp32 SIMT runs at ~14 per byte of HBM bandwidth on an H100/H200) it is; below, the
// product is bound by memory, which the split passes only add to (a matrix-vector product, K = 64). A
// product over T rows is judged at T = 2048 (a long prompt chunk); each bucket's timing then picks.
bool split_tf32_may_pay(const GeneralMatmul& g) {
  const double M = static_cast<double>(g.M == 0 ? 2048 : g.M), N = static_cast<double>(g.N), K = static_cast<double>(g.K);
  const double flops = 2.0 * M * N * K, bytes = 4.0 * (M * K + K * N + M * N);
  constexpr double kSplitMinimumFlopsPerByte = 64;
  return flops >= kSplitMinimumFlopsPerByte * bytes;
}

bool is_one_plain_f32_linear(const MatmulMatch& m) {
  return m.dtype == ir::DType::kF32 && m.out_dtype == ir::DType::kF32 && weights_are_plain(m) && !m.norm && !m.residual_norm &&
         m.epilogue == MatmulEpilogue::kPlain && m.segments.size() == 1 && m.residual.empty();
}

class CublasFamily final : public TypedFamily<CublasMatch, CublasConfig> {
 public:
  std::string name() const override { return "cublas"; }
  std::string template_file() const override { return "epilogue.cuh"; }
  bool library() const override { return true; }

  std::optional<CublasMatch> match(const RegionContext& ctx) const override {
    if (auto m = match_matmul_region(ctx, TokenCount::kAny)) {
      // Quantized weights: the row formats are dequantized into the workspace first (not GGUF blocks).
      if (!weights_are_plain(*m) && (!qgemv_reads(m->w_dtype) || m->K % (ir::quant_layout(m->w_dtype).bits == 8 ? 16 : 32) != 0))
        return std::nullopt;
      // One plain fp32 linear (its bias included) worth splitting for TF32: the general form, whose
      // space holds the 3xTF32 candidate next to the same fp32 cuBLAS GEMM (a bias: its row program).
      if (is_one_plain_f32_linear(*m))
        if (auto g = match_general_matmul(ctx); g && split_tf32_may_pay(*g)) return CublasMatch{std::move(*g), 0};
      const auto& x = ctx.function->type(ctx.node(0).operands[0]);
      const int64_t tokens_static = x.shape[0].is_static() ? x.shape[0].value : 0;
      // The fixed form lays its workspace out per token (slot "workspace:P" is P bytes times T), which
      // holds for T rows and for one static row; a static count of several rows (a captured module's
      // batch of 16384 where T is 1) would write past it. Those take the general form, sized by its rows.
      if (tokens_static > 1 && (cublas_per_token_bytes(*m) > 0 || !weights_are_plain(*m))) {
        if (auto g = match_general_matmul(ctx)) return CublasMatch{std::move(*g), 0};
        return std::nullopt;
      }
      return CublasMatch{std::move(*m), tokens_static};  // 0: T
    }
    if (auto m = match_general_matmul(ctx)) return CublasMatch{std::move(*m), 0};
    return std::nullopt;
  }

  std::vector<Choice> param_space(const CublasMatch& m, const DeviceProfile& device) const override {
    Choice c{CublasConfig(m)};
    c.score = 0.05;  // ranked last: the baseline every generated kernel must beat
    if (const GeneralMatmul* program = m.program())
      c.notes.push_back(std::string("library fallback: cublasGemmStridedBatchedEx, fp32 compute (no TF32)") +
                        (program->epilogue ? ", then the epilogue as a generated row program over the fp32 product" : ""));
    else if (!weights_are_plain(*m.fixed()))
      c.notes.push_back("library fallback: " + std::string(ir::dtype_name(m.fixed()->w_dtype)) + " weights dequantized to " +
                        std::string(ir::dtype_name(m.fixed()->dtype)) + " in the workspace, then cublasGemmEx per linear, fp32 compute");
    else
      c.notes.push_back("library fallback: cublasGemmEx per linear, fp32 compute");
    std::vector<Choice> out;
    out.push_back(std::move(c));
    // fp32 operands on TF32 tensor cores (sm_80 and later) at fp32 accuracy: three GEMMs on split
    // operands, ~3x the tensor-core FLOPs of one, still well under the fp32 SIMT GEMM's time when the
    // product is large; the split passes read A and B once and write them twice.
    const GeneralMatmul* g = m.program();
    if (g && g->dtype == ir::DType::kF32 && device.sm_major >= 8 && split_tf32_may_pay(*g)) {
      Choice split{CublasConfig(m, true)};
      split.score = 0.5;
      split.notes.push_back("3xTF32: A and B split into TF32 high parts and fp32 residuals, then three cublasGemmStridedBatchedEx "
                            "with TF32 compute accumulate A_lo*B_hi + A_hi*B_lo + A_hi*B_hi (fp32-level error)");
      out.push_back(std::move(split));
    }
    return out;
  }

  std::string kernel_name(const CublasConfig& config) const override {
    std::ostringstream name;
    if (const GeneralMatmul* g = config.match.program()) {
      name << "cublas_mm_" << dtype_tag(g->dtype) << "_b" << (g->batch_T ? (g->batch == 1 ? std::string("T") : "T" + std::to_string(g->batch)) : std::to_string(g->batch)) << "_m"
           << (g->M ? std::to_string(g->M) : "T") << "_n" << g->N << "_k" << g->K << "_t" << g->trans_a << g->trans_b;
      if (g->epilogue) name << "_" << g->epilogue->ops_tag() << "_" << row_program_digest(config.match_view());
      if (config.split_tf32) name << "_3xtf32";
      return name.str();
    }
    // Rows are part of the name: the generated kernels differ between one static token and T.
    const MatmulMatch& m = *config.match.fixed();
    const int64_t rows = config.match.tokens_static;
    name << "cublas_" << matmul_prologue_tag(m) << matmul_epilogue_name(m.epilogue) << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_n" << m.N << "_k" << m.K << "_m" << (rows ? std::to_string(rows) : "T");
    if (!weights_are_plain(m)) name << "_" << ir::dtype_name(m.w_dtype);
    return name.str();
  }

  std::vector<Launch> launches(const CublasConfig& config) const override {
    const std::string base = kernel_name(config);
    if (const GeneralMatmul* g = config.match.program()) return general_matmul_launches(*g, base, config.split_tf32);
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
    // Quantized weights: a dequantize launch per linear, and the GEMMs read its rows from the workspace.
    std::vector<std::string> weights;
    for (size_t s = 0; s < m.segments.size(); ++s) {
      if (weights_are_plain(m)) {
        weights.push_back(m.segments[s].w);
        continue;
      }
      Launch dequant;
      dequant.kernel = base + "_dequant" + std::to_string(s);
      // One 16-byte chunk (16 int8 or 32 int4 elements) a thread, over the whole matrix (dequant.cuh).
      const int64_t chunks = m.segments[s].rows * (m.K / (ir::quant_layout(m.w_dtype).bits == 8 ? 16 : 32));
      dequant.block_x = kCublasDequantThreads;
      dequant.grid_x = Extent{0, (chunks + kCublasDequantThreads - 1) / kCublasDequantThreads, 1};
      out.push_back(dequant);
      weights.push_back("workspace:" + std::to_string(cublas_per_token_bytes(m)) + "+" + std::to_string(cublas_dequantized_offset(m, s)));
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
      gemm(weights[0], "workspace:0", rows, "f32");
      gemm(weights[1], "workspace:" + std::to_string(rows * 4), rows, "f32");
    } else if (cublas_bias_in_fp32(m)) {
      // Each segment's fp32 product: [T, rows_s] after the segments before it.
      int64_t offset = 0;
      for (size_t s = 0; s < m.segments.size(); ++s) {
        gemm(weights[s], "workspace:" + std::to_string(offset), m.segments[s].rows, "f32");
        offset += m.segments[s].rows * 4;
      }
    } else {
      for (size_t s = 0; s < m.segments.size(); ++s)
        gemm(weights[s], m.segments[s].y, m.segments[s].rows, std::string(ir::dtype_name(m.out_dtype)));
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
    if (const GeneralMatmul* g = config.match.program()) return general_matmul_workspace(*g, config.split_tf32).per_token;
    return cublas_per_token_bytes(*config.match.fixed());
  }
  // The dequantized weights of a quantized match.
  int64_t workspace_bytes_fixed(const CublasConfig& config) const override {
    const GeneralMatmul* g = config.match.program();
    if (g) return general_matmul_workspace(*g, config.split_tf32).fixed;
    const MatmulMatch& m = *config.match.fixed();
    return weights_are_plain(m) ? 0 : cublas_dequantized_offset(m, m.segments.size());
  }
};

}  // namespace

bool cublas_bias_in_fp32(const MatmulMatch& m) {
  if (m.epilogue != MatmulEpilogue::kPlain && m.epilogue != MatmulEpilogue::kMulti) return false;
  if (!ir::is_float(m.out_dtype) || ir::dtype_size(m.out_dtype) != 2) return false;
  for (const MatmulSegment& segment : m.segments)
    if (!segment.b.empty()) return true;
  return false;
}

namespace {
int64_t round_up(int64_t bytes, int64_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }
}  // namespace

int64_t cublas_normalized_row_offset(const MatmulMatch& m) {
  if (m.epilogue == MatmulEpilogue::kGateUp) return round_up(2 * m.N * 4, 16);
  return cublas_bias_in_fp32(m) ? round_up(m.N * 4, 16) : 0;
}

int64_t cublas_per_token_bytes(const MatmulMatch& m) {
  const int64_t bytes = cublas_normalized_row_offset(m) + (m.norm ? m.K * static_cast<int64_t>(ir::dtype_size(m.dtype)) : 0);
  return weights_are_plain(m) ? bytes : round_up(bytes, 256);
}

int64_t cublas_dequantized_offset(const MatmulMatch& m, size_t segment) {
  int64_t offset = 0;
  for (size_t s = 0; s < segment && s < m.segments.size(); ++s)
    offset += round_up(m.segments[s].rows * m.K * static_cast<int64_t>(ir::dtype_size(m.dtype)), 256);
  return offset;
}

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
