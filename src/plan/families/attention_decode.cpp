// Decode attention family (src/kernels/attention_decode.cuh): attention regions of one query token
// over the KV cache, head dims 64, 96, 128 and 256, with or without a sliding window (the splits then
// cover only the window's keys, so the cost stops growing with the context). Three variants: split-KV flash decoding (a split launch over (SPLITS, KV) blocks
// whose active count follows the runtime length, then a combine launch); on sm_90+, the same splits
// as one thread-block cluster per kv head that combines in distributed shared memory (one launch, no
// workspace); and a single launch of KV blocks for short contexts, which is also the fallback.
// A region that opens with its token's QK-norm / RoPE / KV append (plan/families/attention_prologue.h)
// is done in the same launch: every block rotates the query itself, and the block whose keys include
// the new one computes that row, writes it to the cache and uses it from registers; the QK-norms may
// be per head or over the whole projection, with weights of the activation dtype or f32.
// The record is in attention_decode.h; codegen/renderers/attention_decode.cpp writes the source.
#include "plan/families/attention_decode.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <cmath>
#include <sstream>


namespace agentcompile::plan {

namespace {

using ir::OpKind;

// Registers a lane needs, an upper bound fitted to ptxas on sm_90a (group 2: 64-95, group 4:
// 120-165 for unroll 2-8): q and the accumulators (8 floats each per query head) and the in-flight
// K/V lines (twice as many with prefetch).
int64_t estimated_registers(int64_t group, int64_t unroll, bool prefetch = false) {
  return 24 * group + 8 * unroll * (prefetch ? 2 : 1) + 10;
}
// Norms over the whole projection keep every query head's own 8 weights, not one row for all.
int64_t estimated_registers(const AttentionDecodeMatch& m, int64_t unroll, bool prefetch = false) {
  const int64_t group = m.group();
  return estimated_registers(group, unroll, prefetch) + (m.whole_norm() ? 8 * (group - 1) : 0);
}

// Measured on H200 (Qwen3 bf16, 30k keys, tests/gpu/attention_decode_test.cpp): 8 lines in flight
// per lane beat 16 by ~15% (u4 40.3 us, u8 45-47 us); 256-thread blocks beat 128 by ~10% at the
// same depth; the pipelined step (prefetch) measured ~1% behind the plain one at equal depth.
double depth_prior(int64_t unroll, bool prefetch) {
  const int64_t lines = 2 * unroll * (prefetch ? 2 : 1);
  const double by_lines = lines <= 2 ? 0.8 : lines == 4 ? 0.93 : lines == 8 ? 1.0 : 0.88;
  return by_lines * (prefetch ? 0.99 : 1.0);
}
double threads_prior(int64_t threads) { return threads == 256 ? 1.0 : threads == 512 ? 0.97 : 0.92; }

// Unrolls worth trying: 1 only where the query heads of a group crowd the registers.
bool unroll_considered(int64_t group, int unroll) { return unroll > 1 || group > 4; }

// The mean of values[first..N).
template <size_t N>
double average(const std::array<double, N>& values, size_t first) {
  double sum = 0;
  for (size_t i = first; i < N; ++i) sum += values[i];
  return sum / static_cast<double>(N - first);
}

// Lanes that share a key row: D/8 rounded up to a power of two (attention_decode_lanes in the kernel).
int64_t row_lanes(int64_t D) {
  int64_t lanes = 1;
  while (lanes < D / 8) lanes *= 2;
  return lanes;
}

// Keys a query reads at `len` keys of context: all of them, or the window's.
int64_t keys_read(const AttentionDecodeMatch& m, int64_t len) { return m.window > 0 ? std::min(len, m.window) : len; }

int64_t split_shared_bytes(int64_t group, int64_t D, int64_t threads) { return threads / 32 * group * (D + 2) * 4; }
// The cluster form also holds, in block 0, every block's partial of the kv head.
int64_t cluster_shared_bytes(int64_t group, int64_t D, int64_t threads, int64_t splits) {
  return split_shared_bytes(group, D, threads) + splits * group * (D + 2) * 4;
}
// Past the 48 KB of static shared memory a block has without opting in, the cluster form keeps its
// accumulators in dynamic shared memory (attention_decode_dynamic_shared in the kernel, the same rule):
// the bytes its launch asks for, or 0.
constexpr int64_t kStaticSharedBytes = 48 * 1024;
int64_t cluster_dynamic_shared_bytes(int64_t group, int64_t D, int64_t threads, int64_t splits) {
  if (cluster_shared_bytes(group, D, threads, splits) <= kStaticSharedBytes) return 0;
  return (threads / 32 + splits) * group * D * 4;
}

struct Schedule {
  int64_t threads, unroll, chunk, splits;
  bool prefetch = false;
  bool cluster = false;  // the splits of a kv head combine inside one launch
};

// Blocks in a cluster that every sm_90 GPU schedules, and the most H100/H200 schedule once a kernel
// opts in (gpu::CudaModule::function sets the attribute). 16 splits of 8 kv heads fill 128 SMs.
constexpr int64_t kPortableClusterBlocks = 8;
constexpr int64_t kLargestClusterBlocks = 16;

struct Estimate {
  double us = 0;        // estimated time of the candidate
  double ideal_us = 0;  // K/V bytes at full bandwidth plus one launch
  int64_t blocks = 0;   // blocks that do work
};

// A rough time model for ranking only (measurement decides): the K/V bytes stream at the device
// bandwidth scaled by how much of the ~32 KiB per SM of loads in flight that bandwidth needs the
// running blocks keep issued and by the idle part of a last partial wave; a dependent chain of
// steps per block costs ~0.5 us each; the split variant adds a second launch (~2 us: measured at
// 77 keys, single 5.3 us against split 7.3 us) and the partials it writes and reads.
Estimate estimate(const AttentionDecodeMatch& m, const DeviceProfile& device, const Schedule& s, int64_t context) {
  const int64_t KV = m.KV, D = m.D, NH = m.NH, group = m.group();
  const int64_t len = keys_read(m, context);
  const double bandwidth = device.memory_bandwidth_gbs * 1e3;  // bytes per us
  const double bytes = 2.0 * static_cast<double>(len * KV * D * 2);
  int64_t splits = 1, keys = len;
  if (s.splits > 1) {
    keys = std::max<int64_t>(s.chunk, ((len + s.splits - 1) / s.splits + 15) / 16 * 16);
    splits = (len + keys - 1) / keys;
  }
  Estimate e;
  e.blocks = KV * (s.cluster ? s.splits : splits);
  const int64_t registers = (estimated_registers(m, s.unroll, s.prefetch) + 7) / 8 * 8;
  const int64_t resident = std::max<int64_t>(1, std::min({device.max_threads_per_sm / s.threads,
                                                          device.registers_per_sm / (s.threads * registers),
                                                          device.shared_per_sm / (s.cluster ? cluster_shared_bytes(group, D, s.threads, s.splits)
                                                                                    : split_shared_bytes(group, D, s.threads)),
                                                          int64_t{32}}));
  const double blocks_per_sm = std::min<double>(static_cast<double>(resident),
                                                static_cast<double>(e.blocks) / device.multiprocessors);
  const double waves = std::ceil(static_cast<double>(e.blocks) / static_cast<double>(resident * device.multiprocessors));
  const double in_flight = blocks_per_sm * static_cast<double>(s.threads * 2 * s.unroll * (s.prefetch ? 2 : 1) * 16);
  double efficiency = std::min(1.0, in_flight / (32.0 * 1024));
  // A partial last wave idles SMs (measured at 30k: 504 blocks over 2 waves 13% behind 256 in one).
  if (waves > 1) efficiency *= 0.5 + 0.5 * static_cast<double>(e.blocks) / (waves * static_cast<double>(resident * device.multiprocessors));
  const int64_t keys_per_step = s.threads / row_lanes(D) * s.unroll;
  const double chain_us = 1.5 + 0.5 * static_cast<double>((keys + keys_per_step - 1) / keys_per_step);
  e.us = std::max(bytes / (bandwidth * efficiency), waves * chain_us) + 2.0;
  // The merge of a block's warps, and the room its blocks take from the next kernel's, which would
  // be loading their weights meanwhile: in a Qwen3-1.7B decode layer at 200 keys (H200,
  // bench/micro/layer_chain.cu), clusters of 16, 8 and 4 blocks per kv head of 256 threads added 4.3,
  // 3.1 and 2.7 us, of 128 threads 3.7 (16) and 2.7 us (8), of 512 threads 5.0 (8) and 4.4 us (4).
  const int64_t resident_blocks = s.cluster ? e.blocks : KV * splits;
  e.us += 0.08 * static_cast<double>(s.threads / 32) + 0.0125 * static_cast<double>(resident_blocks * s.threads) / 256;
  if (s.cluster) e.us += 0.25;  // the cluster barrier and the partials stored to block 0
  else if (s.splits > 1) e.us += 2.0 + 2.0 * static_cast<double>(NH * splits * (D + 2) * 4) / bandwidth;
  e.ideal_us = bytes / bandwidth + 2.0;
  return e;
}

std::string length_label(int64_t keys) { return keys >= 1024 ? std::to_string(keys / 1024) + "k" : std::to_string(keys); }

// The region is timed at several contexts (one per decode bucket), and the schedule the estimate
// likes best at one length may rank below the best of its form on the average: such a choice gets
// a form of its own ("split@32k"), which the planner keeps in a capped space. A choice's score is
// its mean over lengths[first_scored..] times its priors.
template <class Choice, size_t N>
void keep_best_at_each_length(std::vector<Choice>& choices, const std::vector<std::array<double, N>>& at_length,
                              const int64_t (&lengths)[N], size_t first_scored) {
  std::map<std::string, size_t> best_of_form;
  for (size_t i = 0; i < choices.size(); ++i) {
    auto it = best_of_form.find(choices[i].form);
    if (it == best_of_form.end() || choices[i].score > choices[it->second].score) best_of_form[choices[i].form] = i;
  }
  for (size_t l = 0; l < N; ++l) {
    size_t winner = 0;
    double best = -1;
    for (size_t i = 0; i < choices.size(); ++i) {
      const double prior = at_length[i][l] > 0 ? choices[i].score / average(at_length[i], first_scored) : 0;  // the depth and thread priors
      if (at_length[i][l] * prior > best) {
        best = at_length[i][l] * prior;
        winner = i;
      }
    }
    if (choices.empty()) continue;
    // Already the best of its form, or already given a form of its own at a shorter length.
    const auto best_of_its_form = best_of_form.find(choices[winner].form);
    if (best_of_its_form == best_of_form.end() || best_of_its_form->second == winner) continue;
    const std::string length = length_label(lengths[l]);
    choices[winner].form.append("@").append(length);
    choices[winner].notes.push_back(std::string("best estimate at ").append(length).append(" keys"));
  }
}

class AttentionDecodeFamily final : public TypedFamily<AttentionDecodeMatch, AttentionDecodeConfig> {
 public:
  std::string name() const override { return "attention_decode"; }
  std::string template_file() const override { return "attention_decode.cuh"; }

  std::optional<AttentionDecodeMatch> match(const RegionContext& ctx) const override {
    const auto view = read_attention_region(ctx, nullptr);
    if (!view) return std::nullopt;
    const ir::Node& n = *view->attention;
    // One query token, or decode_batch's per-row form (q, k, v, pos[T], base[T]): T rows, each one
    // query of its own sequence (blockIdx.z of both launches), with no prologue.
    const bool rows = n.operands.size() == 5;
    if (n.operands.size() != 4 && !rows) return std::nullopt;
    const auto& q = ctx.function->type(n.operands[0]);  // [1 or T, NH, D]
    const auto& k = ctx.function->type(n.operands[1]);  // [L, KV, D]
    const auto& v = ctx.function->type(n.operands[2]);  // [L, KV, D]
    if (q.shape.size() != 3 || k.shape.size() != 3 || k != v) return std::nullopt;
    if (rows ? (q.shape[0].is_static() || view->prologue) : (!q.shape[0].is_static() || q.shape[0].value != 1)) return std::nullopt;
    if (!q.shape[1].is_static() || !q.shape[2].is_static() || !k.shape[1].is_static() || k.shape[2] != q.shape[2])
      return std::nullopt;
    if (q.dtype != k.dtype || (q.dtype != ir::DType::kF16 && q.dtype != ir::DType::kBF16)) return std::nullopt;
    const int64_t NH = q.shape[1].value, KV = k.shape[1].value, D = q.shape[2].value;
    if (KV <= 0 || NH % KV != 0 || NH / KV > 8) return std::nullopt;
    // D/8 lanes per key row, padded to a power of two that tiles a warp (12 of 16 at D = 96).
    if (D != 64 && D != 96 && D != 128 && D != 256) return std::nullopt;
    const int64_t window = n.int_attr("window", 0);

    AttentionDecodeMatch m;
    m.dtype = q.dtype;
    if (ctx.function->type(n.result).dtype != m.dtype) return std::nullopt;
    m.pos = ctx.slot_of(n.operands[3]);
    m.out = ctx.slot_of(n.result);
    if (view->prologue) {
      // q: the raw query; k, v: the caches; the prologue's k_in, v_in: the token's row.
      const AttentionPrologue& p = *view->prologue;
      m.q = p.q_in;
      m.k = p.k_cache;
      m.v = p.v_cache;
      m.prologue = p;
      if (p.k_in.empty() || p.v_in.empty() || (!p.q_norm.empty() && p.k_norm.empty())) return std::nullopt;
    } else {
      m.q = ctx.slot_of(n.operands[0]);
      m.k = ctx.slot_of(n.operands[1]);
      m.v = ctx.slot_of(n.operands[2]);
    }
    if (rows && (m.base = ctx.slot_of(n.operands[4])).empty()) return std::nullopt;
    for (const std::string* slot : {&m.q, &m.k, &m.v, &m.pos, &m.out})
      if (slot->empty()) return std::nullopt;
    m.NH = NH;
    m.KV = KV;
    m.D = D;
    m.scale = static_cast<float>(n.float_attr("scale", 1.0 / std::sqrt(static_cast<double>(D))));
    m.window = window > 0 ? window : 0;
    return m;
  }

  std::vector<Choice> param_space(const AttentionDecodeMatch& m, const DeviceProfile& device) const override {
    std::vector<Choice> out;
    const int64_t group = m.group(), D = m.D;
    // The split and single forms keep their partials in static shared memory (48 KB at most); the
    // cluster form moves them to dynamic shared memory past that and checks its own total.
    // Registers: at most 200 by the estimate, which leaves the compiler room; 8 query heads per kv head
    // (Llama-3 70B: 64 over 8, at any tensor-parallel degree) need ~210 at one step in flight, so
    // there the hardware's limit holds (a spill shows in admission's timing, not in the results).
    const int64_t register_cap = std::min<int64_t>(device.max_registers_per_thread, group > 4 ? 255 : 200);
    auto fits_registers = [&](int64_t threads, int64_t unroll, bool prefetch) {
      const int64_t registers = estimated_registers(m, unroll, prefetch);
      return threads <= device.max_threads_per_block && registers <= register_cap && registers * threads <= device.registers_per_sm;
    };
    auto fits = [&](int64_t threads, int64_t unroll, bool prefetch = false) {
      return split_shared_bytes(group, D, threads) <= kStaticSharedBytes && fits_registers(threads, unroll, prefetch);
    };
    // Lengths the heuristic looks at, near where the decode buckets time the region (256, 2k, 8k
    // and 32k keys). The score weighs the last three; the first only earns the schedule it likes
    // best a place in the space (keep_best_at_each_length), since at a few hundred keys the
    // attention is latency that the estimate models coarsely.
    constexpr int64_t kLengths[] = {256, 1024, 4096, 32768};
    constexpr size_t kFirstScored = 1;
    std::vector<std::array<double, std::size(kLengths)>> at_length;  // per choice: ideal / estimated time
    auto score_of = [&](const Schedule& s, std::ostringstream& note) {
      double sum = 0;
      at_length.emplace_back();
      for (size_t i = 0; i < std::size(kLengths); ++i) {
        const int64_t len = kLengths[i];
        const Estimate e = estimate(m, device, s, len);
        at_length.back()[i] = e.ideal_us / e.us;
        if (i >= kFirstScored) sum += e.ideal_us / e.us;
        note << length_label(len) << ": " << e.blocks << " blocks, ~" << static_cast<int>(e.us * 10) / 10.0 << " us; ";
      }
      return sum / static_cast<double>(std::size(kLengths) - kFirstScored);
    };
    for (int threads : {128, 256, 512}) {
      for (int unroll : {1, 2, 4, 8}) {
        for (int prefetch : {0, 1}) {
          if (!unroll_considered(group, unroll) || !fits(threads, unroll, prefetch)) continue;
          if (prefetch && unroll == 8) continue;  // 32 lines in flight per lane: past what helps
          const int64_t keys_per_step = threads / row_lanes(D) * unroll;
          // Split-KV: keys per split at least `chunk`, at most `splits` splits per kv head.
          for (int chunk : {32, 64, 128, 256}) {
            if (chunk < keys_per_step / 2) continue;  // most of the block would idle on its only step
            for (int splits : {32, 64, 128, 256}) {
              Choice c{AttentionDecodeConfig(m, AttentionDecodeSchedule{threads, unroll, prefetch != 0, chunk, splits, false, false})};
              std::ostringstream note;
              note << "split-KV, " << 2 * unroll * (prefetch ? 2 : 1) << " 16-byte loads in flight per lane"
                   << (prefetch ? " (pipelined)" : "") << "; ";
              c.score = score_of(Schedule{threads, unroll, chunk, splits, prefetch != 0}, note) *
                        depth_prior(unroll, prefetch) * threads_prior(threads);
              c.notes.push_back(note.str());
              c.form = "split";
              out.push_back(std::move(c));
            }
          }
        }
      }
    }
    // Split-KV in one launch: the splits of a kv head are one cluster (sm_90+) and combine through
    // distributed shared memory. Keys per split follow the length (at least 16), so short and long
    // contexts both use every split.
    if (device.sm_major >= 9) {
      for (int threads : {128, 256, 512}) {
        for (int unroll : {1, 2, 4}) {
          for (int prefetch : {0, 1}) {
            if (!unroll_considered(group, unroll) || !fits_registers(threads, unroll, prefetch)) continue;
            if (prefetch && unroll == 4) continue;
            for (int64_t splits : {int64_t{4}, kPortableClusterBlocks, kLargestClusterBlocks}) {
              if (cluster_shared_bytes(group, D, threads, splits) > device.shared_per_block_optin) continue;
              Choice c{AttentionDecodeConfig(m, AttentionDecodeSchedule{threads, unroll, prefetch != 0, 16, splits, true, false})};
              std::ostringstream note;
              note << "split-KV in one launch (cluster of " << splits << " per kv head), " << 2 * unroll * (prefetch ? 2 : 1)
                   << " 16-byte loads in flight per lane; ";
              c.score = score_of(Schedule{threads, unroll, 16, splits, prefetch != 0, true}, note) * depth_prior(unroll, prefetch) *
                        threads_prior(threads);
              c.notes.push_back(note.str());
              c.form = "cluster" + std::to_string(splits);  // each cluster size keeps its best: latency favours small ones
              out.push_back(std::move(c));
            }
          }
        }
      }
    }
    // One launch of KV blocks that read every key: no combine, no workspace; for short contexts.
    const int fallback_unroll = fits(128, 2) ? 2 : 1;
    for (int threads : {128, 256, 512}) {
      for (int unroll : {1, 2, 4}) {
        if (!(unroll_considered(group, unroll) || unroll == fallback_unroll) || !fits(threads, unroll)) continue;
        Choice c{AttentionDecodeConfig(m, AttentionDecodeSchedule{threads, unroll, false, 0, 1, false, false})};
        std::ostringstream note;
        note << "single launch; ";
        c.score = score_of(Schedule{threads, unroll, 0, 1}, note);
        c.notes.push_back(note.str());
        c.form = "single";
        if (threads == 128 && unroll == fallback_unroll) {
          c.config.schedule.fallback = true;
          c.notes.push_back("fallback: one kernel, no workspace");
        }
        out.push_back(std::move(c));
      }
    }
    keep_best_at_each_length(out, at_length, kLengths, kFirstScored);
    return out;
  }

  std::string kernel_name(const AttentionDecodeConfig& config) const override {
    const AttentionDecodeMatch& m = config.match;
    const AttentionDecodeSchedule& p = config.schedule;
    std::ostringstream name;
    const bool split = p.splits > 1;
    name << "attention_decode_" << (p.cluster ? "cluster" : split ? "split" : "single") << "_" << dtype_tag(m.dtype) << "_h" << m.NH
         << "x" << m.KV << "_d" << m.D << (m.rows() ? "_rows" : "") << (m.prologue ? prologue_name(*m.prologue) : "");
    if (m.window > 0) name << "_win" << m.window;
    name << "_t" << p.threads << "_u" << p.unroll << (p.prefetch ? "p" : "");
    if (split) name << "_c" << p.chunk << "_s" << p.splits;
    return name.str();
  }

  std::vector<Launch> launches(const AttentionDecodeConfig& config) const override {
    const AttentionDecodeMatch& m = config.match;
    Launch main;
    main.kernel = kernel_name(config);
    main.grid_x = Extent{0, config.schedule.splits, 1};
    main.grid_y = Extent{0, m.KV, 1};
    if (m.rows()) main.grid_z = Extent{1, 0, 1};  // a row per z
    main.block_x = static_cast<int>(config.schedule.threads);
    if (config.schedule.cluster)
      main.shared_bytes = cluster_dynamic_shared_bytes(m.group(), m.D, config.schedule.threads, config.schedule.splits);
    if (!config.partials()) return {main};
    Launch combine;
    combine.kernel = main.kernel + "_combine";
    combine.grid_x = Extent{0, m.NH, 1};
    combine.grid_y = Extent{0, m.D / 32, 1};
    if (m.rows()) combine.grid_z = Extent{1, 0, 1};
    combine.block_x = 128;
    return {main, combine};
  }

  // Partials of the split launch: [NH, SPLITS, D] accumulators, then [NH, SPLITS, 2] max and sum; in
  // the per-row form one such block per row.
  int64_t workspace_bytes_fixed(const AttentionDecodeConfig& config) const override {
    return config.partials() && !config.match.rows() ? partial_bytes(config) : 0;
  }
  int64_t workspace_bytes_per_token(const AttentionDecodeConfig& config) const override {
    return config.partials() && config.match.rows() ? partial_bytes(config) : 0;
  }
  static int64_t partial_bytes(const AttentionDecodeConfig& config) {
    return config.match.NH * config.schedule.splits * (config.match.D + 2) * 4;
  }
};

}  // namespace

Match AttentionDecodeConfig::match_view() const {
  const AttentionDecodeMatch& a = match;
  Match m;
  m.variant = "gqa";
  m.dtype = a.dtype;
  m.out_dtype = a.dtype;
  m.roles["pos"] = a.pos;
  m.roles["out"] = a.out;
  if (a.rows()) m.roles["base"] = a.base;
  if (a.prologue) {
    add_prologue_to_match(*a.prologue, m);
  } else {
    m.roles["q"] = a.q;
    m.roles["k"] = a.k;
    m.roles["v"] = a.v;
  }
  m.facts["NH"] = a.NH;
  m.facts["KV"] = a.KV;
  m.facts["D"] = a.D;
  m.facts["group"] = a.group();
  m.facts["scale_f32_bits"] = std::bit_cast<int32_t>(a.scale);
  if (a.window > 0) m.facts["window"] = a.window;
  return m;
}

ParamSet AttentionDecodeConfig::params_view() const {
  const AttentionDecodeSchedule& s = schedule;
  ParamSet p{{"threads", s.threads}, {"unroll", s.unroll}, {"prefetch", s.prefetch},
             {"chunk", s.chunk},     {"splits", s.splits}, {"cluster", s.cluster}};
  if (s.fallback) p["fallback"] = 1;
  return p;
}

AC_REGISTER_FAMILY(attention_decode, 80, AttentionDecodeFamily)

}  // namespace agentcompile::plan
