// The library fallback for matmul regions: one cuBLAS GEMM per linear (cublasGemmEx, fp32 compute)
// followed, when the region has an epilogue, by a small generated elementwise kernel (bias, residual
// add, act(gate)·up with act SiLU or GELU) that reads the GEMM results. A region with an RMSNorm
// prologue first runs a generated RMSNorm kernel (rmsnorm.cuh, weights T or f32; with a residual-norm
// prologue gemv.cuh's residual_norm_rows, which also writes h) into the workspace, and the GEMMs read
// the row from there. Regions the fixed epilogues do not cover (a batched or
// transposed matmul, a linear with any pointwise epilogue) take the "program" variant
// (matmul_general.h): one strided-batched GEMM, then a generated row program over its fp32 product.
// Always in the space of a matmul region, and marked as its fallback: a generated kernel is selected
// only when it is measured faster.
#include <sstream>

#include "plan/families.h"
#include "plan/families/matmul_general.h"
#include "plan/families/matmul_match.h"
#include "plan/families/row_program.h"

namespace agentcompile::plan {

namespace {

class CublasFamily final : public TemplateFamily {
 public:
  std::string name() const override { return "cublas"; }
  std::string template_file() const override { return "epilogue.cuh"; }

  std::optional<Match> match(const RegionContext& ctx) const override {
    auto m = match_matmul_region(ctx, TokenCount::kAny);
    if (!m) return match_general_matmul(ctx);
    const auto& x = ctx.function->type(ctx.node(0).operands[0]);
    m->facts["tokens_static"] = x.shape[0].is_static() ? x.shape[0].value : 0;  // 0: T
    return m;
  }

  std::vector<Choice> param_space(const Match& m, const DeviceProfile&) const override {
    Choice c;
    c.params = {{"fallback", 1}};
    c.score = 0.05;  // ranked last: the baseline every generated kernel must beat
    if (m.variant == "program")
      c.notes.push_back(std::string("library fallback: cublasGemmStridedBatchedEx, fp32 compute (no TF32)") +
                        (m.facts.at("epilogue") ? ", then the epilogue as a generated row program over the fp32 product" : ""));
    else
      c.notes.push_back("library fallback: cublasGemmEx per linear, fp32 compute");
    return {c};
  }

  std::string kernel_name(const Match& m, const ParamSet&) const override {
    std::ostringstream name;
    if (m.variant == "program") {
      const int64_t M = m.facts.at("M");
      name << "cublas_mm_" << dtype_tag(m.dtype) << "_b" << (m.facts.count("batch_T") ? std::string("T") : std::to_string(m.facts.at("batch"))) << "_m" << (M ? std::to_string(M) : "T") << "_n"
           << m.facts.at("N") << "_k" << m.facts.at("K") << "_t" << m.facts.at("trans_a") << m.facts.at("trans_b");
      if (m.facts.at("epilogue")) name << "_" << decode_row_program(m).ops_tag() << "_" << row_program_digest(m);
      return name.str();
    }
    // Rows are part of the name: the generated kernels differ between one static token and T.
    const int64_t rows = m.facts.at("tokens_static");
    name << "cublas_" << matmul_prologue_tag(m) << m.variant << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_n" << m.facts.at("N") << "_k" << m.facts.at("K") << "_m" << (rows ? std::to_string(rows) : "T");
    return name.str();
  }

  std::vector<Launch> launches(const Match& m, const ParamSet& p) const override {
    const std::string base = kernel_name(m, p);
    if (m.variant == "program") return general_matmul_launches(m, base);
    const std::string tokens = m.facts.at("tokens_static") ? std::to_string(m.facts.at("tokens_static")) : "T";
    const int64_t rows = m.facts.at("N");
    std::vector<Launch> out;
    std::string a = m.roles.at("x");
    if (m.facts.count("norm")) {
      Launch norm;
      norm.kernel = base + "_rmsnorm";
      norm.block_x = kNormThreads;
      norm.grid_x = m.facts.at("tokens_static") ? Extent{0, m.facts.at("tokens_static"), 1} : Extent{1, 0, 1};
      out.push_back(norm);
      a = "workspace:" + std::to_string(normalized_row_offset(m));
    }
    auto gemm = [&](const std::string& weight, const std::string& dest, int64_t n, const std::string& c_dtype) {
      Launch l;
      l.kernel = "cublasGemmEx";
      l.library = true;
      l.library_args = {{"op", "gemm"}, {"a", a}, {"b", m.roles.at(weight)}, {"c", dest}, {"m", tokens},
                        {"n", std::to_string(n)}, {"k", std::to_string(m.facts.at("K"))}, {"c_dtype", c_dtype}};
      out.push_back(l);
    };
    const bool has_bias = m.roles.count("b0") || m.roles.count("b1") || m.roles.count("b2");
    if (m.variant == "gate_up") {
      // gate and up in fp32 into the workspace: [T, N] each.
      gemm("w0", "workspace:0", rows, "f32");
      gemm("w1", "workspace:" + std::to_string(rows * 4), rows, "f32");
    } else {
      for (int s = 0; s < 3; ++s)
        if (m.facts.count("rows" + std::to_string(s)))
          gemm("w" + std::to_string(s), m.roles.at("y" + std::to_string(s)), m.facts.at("rows" + std::to_string(s)),
               std::string(ir::dtype_name(m.out_dtype)));
    }
    if (m.variant == "gate_up" || m.variant == "residual" || has_bias) {
      Launch epilogue;
      epilogue.kernel = base + "_epilogue";
      epilogue.block_x = 256;
      // One thread per output element of the widest segment set: ceil(T * N / 256) blocks.
      epilogue.grid_x = m.facts.at("tokens_static") ? Extent{0, m.facts.at("tokens_static") * rows, 256} : Extent{rows, 0, 256};
      out.push_back(epilogue);
    }
    return out;
  }

  // Per token: the fp32 gate and up results (gate_up), then the normalized row (a norm prologue).
  int64_t workspace_bytes_per_token(const Match& m, const ParamSet&) const override {
    if (m.variant == "program") return general_matmul_workspace_per_token(m);
    return normalized_row_offset(m) + (m.facts.count("norm") ? m.facts.at("K") * ir::dtype_size(m.dtype) : 0);
  }
  int64_t workspace_bytes_fixed(const Match& m, const ParamSet&) const override {
    return m.variant == "program" ? general_matmul_workspace_fixed(m) : 0;
  }

 private:
  static constexpr int kNormThreads = 256;  // the prologue kernel: one row per block

  static int64_t normalized_row_offset(const Match& m) { return m.variant == "gate_up" ? 2 * m.facts.at("N") * 4 : 0; }
};

}  // namespace

const TemplateFamily& cublas_family() {
  static const CublasFamily family;
  return family;
}

}  // namespace agentcompile::plan
