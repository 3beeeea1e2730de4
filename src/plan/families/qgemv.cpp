// Quantized GEMV family (src/kernels/qgemv.cuh): matmul regions whose weights are int8 per channel
// or int4 in groups (ir/quant.h), with the f16 GEMV's epilogues (plain with bias, residual add,
// gate/up act·mul, fused multi-segment rows) and its RMSNorm and residual-norm prologues (one token).
// Decode is one block row; a region of T tokens launches T block rows, each reading the weights
// again (until a dequantizing GEMM family exists, that is the prefill path of a quantized model).
// The weights are read at their own size, 16 bytes per load, and dequantized in registers; int4
// groups and int8 (per channel or in groups) with f16 activations also get the tensor-core kernel
// (qgemv_mma.cuh) as candidates of their own form ("mma", the others "scalar"), so a capped space keeps
// the best of each.
// Planning side: matching, the parameter space and launch geometry; the record is in qgemv.h, and
// codegen/renderers/qgemv.cpp writes the source.
#include "plan/families/qgemv.h"

#include <algorithm>
#include <sstream>

#include "ir/quant.h"

namespace agentcompile::plan {

namespace {

// Elements one 16-byte load holds.
int64_t chunk_elements(ir::DType w_dtype) { return ir::quant_layout(w_dtype).bits == 8 ? 16 : 32; }

std::string format_tag(ir::DType w_dtype) { return std::string(ir::dtype_name(w_dtype)); }

class QGemvFamily final : public TypedFamily<QGemvConfig, QGemvConfig> {
 public:
  std::string name() const override { return "qgemv"; }
  std::string template_file() const override { return "qgemv.cuh"; }
  std::string template_file_of(const QGemvConfig& config) const override {
    return config.kernel == QGemvKernel::kMma ? "qgemv_mma.cuh" : "qgemv.cuh";
  }

  std::optional<QGemvConfig> match(const RegionContext& ctx) const override {
    auto m = match_matmul_region(ctx, TokenCount::kAny);
    if (!m || !qgemv_reads(m->w_dtype)) return std::nullopt;
    if (m->dtype != ir::DType::kF16 && m->dtype != ir::DType::kBF16) return std::nullopt;
    if (m->K % chunk_elements(m->w_dtype) != 0) return std::nullopt;
    const ir::Dim rows = ctx.function->type(ctx.node(0).operands[0]).shape[0];
    if (!rows.is_static() && rows.symbol != ir::Symbol::kT) return std::nullopt;
    // One token per block row: x, the residual and the outputs are [tokens, *] rows; the prologues
    // are matched for one token only (matmul_match.h).
    return QGemvConfig(std::move(*m), GemvSchedule{}, rows.is_static() ? rows.value : 0);
  }

  std::vector<Choice> param_space(const QGemvConfig& matched, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const MatmulMatch& m = matched.match;
    const int64_t K = m.K, N = m.N, elems = chunk_elements(m.w_dtype);
    const int mats = m.epilogue == MatmulEpilogue::kGateUp ? 2 : 1;
    if (K * 2 > 48 * 1024) return out;  // x is staged in static shared memory
    // Every lane gets at least one unrolled step of its split, and a split is whole chunks.
    auto fits_k = [K, elems](int split, int unroll) {
      return !((split > 1 || unroll > 1) && K / elems / split < 32 * unroll) && (K / elems) % split == 0;
    };
    const bool mma = qgemv_mma_reads(m);
    for (const GemvGridPoint& point : gemv_grid(N, mats, fits_k)) {
      Choice c{QGemvConfig(m, point.schedule, matched.tokens_static)};
      if (mma) c.form = "scalar";
      // The f16 GEMV's heuristic (plan/families/gemv.cpp): fill the machine, keep about 8 loads
      // in flight per lane; a load here holds 2x (int8) or 4x (int4) the elements, so fewer
      // rows are needed to cover the latency, and the dequantization's ALU work favours more
      // blocks over deep unrolling. Not yet measured on a GPU.
      const int loads = point.loads_in_flight;
      const double flight = loads == 4 ? 1.0 : loads == 8 ? 0.95 : loads == 2 ? 0.85 : 0.7;
      c.score = gemv_fill(point.blocks, device) * flight * gemv_split_penalty(point.schedule.split, point.blocks, device) +
                (point.schedule.threads == 256 ? 0.01 : 0.0);
      c.notes.push_back(std::to_string(point.blocks) + " blocks per token, " + std::to_string(loads) +
                        " 16-byte loads in flight per lane, " + format_tag(m.w_dtype) + " dequantized in registers");
      out.push_back(std::move(c));
    }
    if (mma) add_mma_choices(matched, device, out);
    return out;
  }

  // The tensor-core kernel's schedules (qgemv_mma.cuh): threads {128, 256} x rows {8, 16} (one or
  // two mma tiles per warp) x unroll {1, 2, 4} (slabs of 128 int4 or 64 int8 elements in flight) x split {1, 2, 4}
  // (warps over K, in whole slabs), where the split's warps divide, the slabs divide into splits of
  // whole batches, and a lane keeps at most 8 16-byte loads in flight (double-buffered: 16 loads'
  // registers). Heuristic: the scalar kernel's fill term, more loads in flight preferred (the mmas
  // leave the issue slots to the loads), no penalty for splitting K (a warp's 8 rows are coarse
  // grains: the splits are what fill the machine). For int4 ranked above the scalar kernel: it issues
  // ~3x fewer instructions per element, and it was selected in 3 of Qwen3-1.7B's 4 decode GEMVs on an
  // H200. For int8 ranked level with it: there the scalar kernel issues half as much per byte as for
  // int4, and on an H200 the tensor-core one won only the largest matrices (the 151936-row head of a
  // Q8_0 file 96 against 130 us, Qwen3-1.7B's int8 gate/up 10.0 against 10.7) and lost the others
  // (QKV 5.5 against 4.7-5.1, down 9.1 against 6.9); ranked above, it took six of a region's eight
  // places and pushed the best scalar schedules out (bench/results/2026-11-28-h200/session12/). Ranked
  // level, the capped space of Qwen3-1.7B's int8 decode regions still holds each region's fastest
  // kernel of those runs (both forms); a GPU has not timed the compile with this ranking yet.
  void add_mma_choices(const QGemvConfig& matched, const DeviceProfile& device, std::vector<Choice>& out) const {
    const MatmulMatch& m = matched.match;
    const int64_t K = m.K, N = m.N;
    const int mats = m.epilogue == MatmulEpilogue::kGateUp ? 2 : 1;
    const int64_t slabs = (K + 4 * chunk_elements(m.w_dtype) - 1) / (4 * chunk_elements(m.w_dtype));  // a warp's step: 4 chunks
    // x (padded, and 32 zeros), the split's partial sums and the norm's block scratch in static shared memory.
    if (K * 2 + 2048 > 48 * 1024) return;
    for (int threads : {128, 256})
      for (int rows : {8, 16})
        for (int unroll : {1, 2, 4})
          for (int split : {1, 2, 4}) {
            const int warps = threads / 32;
            if (warps % split != 0 || slabs % (split * unroll) != 0) continue;
            const int loads = unroll * (rows / 8) * mats;
            if (loads > 8) continue;
            const int64_t row_warps = warps / split;
            const int64_t blocks = (N + row_warps * rows - 1) / (row_warps * rows);
            const GemvSchedule schedule{threads, rows, unroll, split};
            Choice c{QGemvConfig(m, schedule, matched.tokens_static, QGemvKernel::kMma)};
            const double flight = loads >= 8 ? 1.0 : loads == 4 ? 0.95 : loads == 2 ? 0.85 : 0.7;
            const double rank = ir::quant_layout(m.w_dtype).bits == 8 ? 1.0 : 1.1;
            c.score = rank * gemv_fill(blocks, device) * flight + (threads == 256 ? 0.01 : 0.0);
            c.notes.push_back(std::to_string(blocks) + " blocks per token, " + std::to_string(loads) + " 16-byte loads in flight per lane, " +
                              format_tag(m.w_dtype) + " dequantized to f16 pairs for mma.sync m16n8k16");
            c.form = "mma";
            out.push_back(std::move(c));
          }
  }

  std::string kernel_name(const QGemvConfig& config) const override {
    const MatmulMatch& m = config.match;
    const GemvSchedule& p = config.schedule;
    std::ostringstream name;
    name << (config.kernel == QGemvKernel::kMma ? "qgemv_mma_" : "qgemv_") << matmul_prologue_tag(m) << matmul_epilogue_name(m.epilogue) << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_" << format_tag(m.w_dtype) << "_n" << m.N << "_k" << m.K << "_m"
         << (config.tokens_static ? std::to_string(config.tokens_static) : "T") << "_t" << p.threads << "_r" << p.rows << "_u" << p.unroll
         << "_s" << p.split;
    return name.str();
  }

  std::vector<Launch> launches(const QGemvConfig& config) const override {
    const GemvSchedule& p = config.schedule;
    const int64_t row_warps = p.threads / 32 / p.split;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = Extent{0, config.match.N, row_warps * p.rows};
    launch.grid_y = config.tokens_static ? Extent{0, config.tokens_static, 1} : Extent{1, 0, 1};
    launch.block_x = static_cast<int>(p.threads);
    return {launch};
  }
};

}  // namespace

bool qgemv_reads(ir::DType w_dtype) {
  if (!ir::is_quantized(w_dtype)) return false;
  const ir::QuantLayout layout = ir::quant_layout(w_dtype);
  return layout.kind == ir::QuantLayout::Kind::kInt8Channel || layout.kind == ir::QuantLayout::Kind::kInt8Group ||
         layout.kind == ir::QuantLayout::Kind::kInt4Group;
}

bool qgemv_mma_reads(const MatmulMatch& match) {
  if (!ir::is_quantized(match.w_dtype) || match.dtype != ir::DType::kF16) return false;
  const ir::QuantLayout layout = ir::quant_layout(match.w_dtype);
  return layout.kind == ir::QuantLayout::Kind::kInt4Group || layout.kind == ir::QuantLayout::Kind::kInt8Channel ||
         layout.kind == ir::QuantLayout::Kind::kInt8Group;
}

const char* qgemv_format_code(ir::DType w_dtype) {
  const ir::QuantLayout layout = ir::quant_layout(w_dtype);
  switch (layout.kind) {
    case ir::QuantLayout::Kind::kInt8Channel: return "ac::kQInt8";
    case ir::QuantLayout::Kind::kInt8Group: return "ac::kQInt8Group";
    default: return layout.offsets ? "ac::kQInt4Offset" : layout.zero_points ? "ac::kQInt4Zp" : "ac::kQInt4";
  }
}

Match QGemvConfig::match_view() const {
  Match m;
  add_matmul_view(match, m);
  m.facts["tokens_static"] = tokens_static;
  return m;
}

ParamSet QGemvConfig::params_view() const {
  ParamSet params = {{"threads", schedule.threads}, {"rows", schedule.rows}, {"unroll", schedule.unroll}, {"split", schedule.split}};
  if (kernel == QGemvKernel::kMma) params["mma"] = 1;  // the scalar kernel's view as it was
  return params;
}

AC_REGISTER_FAMILY(qgemv, 15, QGemvFamily)

}  // namespace agentcompile::plan
