// Batched decode GEMV family (src/kernels/gemv_batch.cuh): the matmul regions of decode_batch, where T
// is the step's sequences (1..16), with the decode GEMV's epilogues (plain with bias, a cast to the
// logits' f32, residual add, gate/up act·mul, fused multi-segment rows). Every weight is read once for
// all the step's tokens and the dot products run on the tensor cores, tokens as the mma's n.
// Planning side: matching, the parameter space and launch geometry; the record is in gemv_batch.h,
// and codegen/renderers/gemv_batch.cpp writes the source.
#include "plan/families/gemv_batch.h"

#include <algorithm>
#include <sstream>

#include "ir/decode_batch.h"
#include "plan/families/gemv.h"

namespace agentcompile::plan {

namespace {

constexpr int64_t kStep = 32;  // elements of K per step of a warp

class GemvBatchFamily final : public TypedFamily<MatmulMatch, GemvBatchConfig> {
 public:
  std::string name() const override { return "gemv_batch"; }
  std::string template_file() const override { return "gemv_batch.cuh"; }

  std::optional<MatmulMatch> match(const RegionContext& ctx) const override {
    // decode_batch only: its T is a step's sequences (at most 16); prefill's T runs to thousands,
    // where the tile GEMM reuses each weight over far more tokens than one pass of 16.
    if (ctx.function->name != ir::kDecodeBatchFunction) return std::nullopt;
    auto m = match_matmul_region(ctx, TokenCount::kAny);
    if (!m || !weights_are_plain(*m) || m->norm) return std::nullopt;
    if (m->dtype != ir::DType::kF16 && m->dtype != ir::DType::kBF16) return std::nullopt;  // mma's inputs
    if (m->K % kStep != 0) return std::nullopt;
    const ir::Dim rows = ctx.function->type(ctx.node(0).operands[0]).shape[0];
    if (rows.is_static() || rows.symbol != ir::Symbol::kT) return std::nullopt;
    return m;
  }

  // threads {128, 256, 512} x tiles {1, 2} x token tiles {1, 2} x unroll {1, 2, 4} x split {1, .., 16} x x ahead
  // {no, yes}: the split's warps divide, K's steps divide into the splits, a lane keeps at most 8 16-byte
  // weight loads in flight (double-buffered: 16 loads' registers) and 32 accumulators, and a split's
  // partials fit in 32 KB of shared memory. Heuristic: a warp owns 16 rows of W (the mma's m), so a
  // matrix of 2048 rows has 128 row tiles and only the split over K gives the SMs enough warps
  // streaming: occupancy is a block per SM and 8 warps per SM (each with 8 loads in flight), times the
  // loads in flight (x's too when a batch ahead); 16 tokens per block row (one pass over W at 9..16
  // sequences) breaks ties.
  // Measured on an H200 (Qwen3-1.7B's 2048 x 6144 down_proj at 16 rows): 128 blocks of 4 warps (split 4)
  // 19.3 us, of 8 warps (split 8) 13.3 us, 1.9 TB/s; its 6144-row gate/up 17.4 us, 2.9 TB/s.
  // x a batch ahead (bench/micro/gemv_batch_chain.cu, 28 layers in a graph, H200,
  // bench/results/2026-11-28-h200/session10/gemv-batch-chain/): at 16 tokens, x's L2 round trip at the
  // start of each batch was exposed; loading it into registers with the batch before took the QKV
  // from 7.7 to 6.7 us and down_proj from 13.0 to 10.8 us (512 threads, split 16), gate/up unchanged.
  // (Prefetching it into L1 instead helped only at one token, where decode_batch rarely runs: a lone
  // sequence decodes through the decode step. It was removed.) Every pair of
  // token tiles and x mode is a form of its own, so a capped space measures each: 8 tokens a block row
  // win the 5-8 bucket (the QKV's 5.6 us against 7.5 at 16 a block row), 16 the 9-16 one.
  std::vector<Choice> param_space(const MatmulMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int mats = m.epilogue == MatmulEpilogue::kGateUp ? 2 : 1;
    const int64_t steps = m.K / kStep;
    const double sms = static_cast<double>(device.multiprocessors);
    for (int threads : {128, 256, 512})
      for (int tiles : {1, 2})
        for (int token_tiles : {1, 2})
          for (int unroll : {1, 2, 4})
            for (int split : {1, 2, 4, 8, 16})
              for (int x_ahead : {0, 2}) {
                const int warps = threads / 32;
                if (warps % split != 0 || steps % split != 0 || steps / split < unroll) continue;
                const int loads = unroll * tiles * 2 * mats;
                const int accumulators = tiles * token_tiles * mats * 4;
                if (loads > 8 || accumulators > 32) continue;
                // A batch ahead in registers: unroll x token tiles 16-byte x loads more per lane.
                const int x_loads = x_ahead == 2 ? unroll * token_tiles : 0;
                // 512 threads leave 128 registers a thread: ptxas (sm_90a) fits loads + accumulators / 2
                // (+ x loads a batch ahead) <= 12 without spilling (residual 8 loads x 8 accumulators:
                // 128; gate/up 8 x 8: 121; 8 x 16 spills; residual 4 x 8 with 4 x loads ahead: 105), and
                // only split 8 or 16 gives the block's warps rows of their own to share.
                if (threads == 512 && (loads + accumulators / 2 + x_loads > 12 || split < 8)) continue;
                if (split > 1 && warps * accumulators * 32 * 4 > 32 * 1024) continue;
                const int64_t row_warps = warps / split;
                const int64_t blocks = (m.N + row_warps * 16 * tiles - 1) / (row_warps * 16 * tiles);
                Choice c{GemvBatchConfig(m, GemvBatchSchedule{threads, tiles, token_tiles, unroll, split, x_ahead})};
                const int in_flight = loads + x_loads;
                const double flight = in_flight >= 8 ? 1.0 : in_flight >= 4 ? 0.9 : 0.7;
                const double occupancy = std::min(1.0, static_cast<double>(blocks) / sms) *
                                         std::min(1.0, static_cast<double>(blocks * warps) / (8 * sms));
                c.score = occupancy * flight * (split >= 8 ? 0.98 : 1.0) + (token_tiles == 2 ? 0.02 : 0.0) +
                          (threads >= 256 ? 0.01 : 0.0) + (x_ahead == 2 ? 0.004 : 0.0);
                c.notes.push_back(std::to_string(blocks) + " blocks of " + std::to_string(warps) + " warps per " +
                                  std::to_string(8 * token_tiles) + " tokens, " + std::to_string(loads) +
                                  " 16-byte weight loads in flight per lane, mma.sync m16n8k16 with tokens as n" +
                                  (x_ahead == 2 ? ", x a batch ahead in registers" : ""));
                c.form = "tokens" + std::to_string(8 * token_tiles) + (x_ahead == 2 ? "_x_ahead" : "");
                out.push_back(std::move(c));
              }
    return out;
  }

  std::string kernel_name(const GemvBatchConfig& config) const override {
    const MatmulMatch& m = config.match;
    const GemvBatchSchedule& p = config.schedule;
    std::ostringstream name;
    name << "gemv_batch_" << matmul_epilogue_name(m.epilogue) << matmul_epilogue_tag(m) << "_" << dtype_tag(m.dtype);
    if (m.out_dtype != m.dtype) name << "_to_" << dtype_tag(m.out_dtype);
    name << "_n" << m.N << "_k" << m.K << "_t" << p.threads << "_m" << p.tiles << "_x" << p.token_tiles << "_u" << p.unroll << "_s"
         << p.split;
    if (p.x_ahead > 0) name << "_a" << p.x_ahead;
    return name.str();
  }

  std::vector<Launch> launches(const GemvBatchConfig& config) const override {
    const GemvBatchSchedule& p = config.schedule;
    const int64_t row_warps = p.threads / 32 / p.split;
    Launch launch;
    launch.kernel = kernel_name(config);
    launch.grid_x = Extent{0, config.match.N, row_warps * 16 * p.tiles};
    launch.grid_y = Extent{1, 0, 8 * p.token_tiles};  // block rows of 8 or 16 tokens
    launch.block_x = static_cast<int>(p.threads);
    return {launch};
  }
};

}  // namespace

Match GemvBatchConfig::match_view() const {
  Match m;
  add_matmul_view(match, m);
  return m;
}

ParamSet GemvBatchConfig::params_view() const {
  return {{"threads", schedule.threads}, {"tiles", schedule.tiles}, {"token_tiles", schedule.token_tiles},
          {"unroll", schedule.unroll}, {"split", schedule.split}, {"x_ahead", schedule.x_ahead}};
}

AC_REGISTER_FAMILY(gemv_batch, 12, GemvBatchFamily)

}  // namespace agentcompile::plan
