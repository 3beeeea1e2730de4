// Renders a decode attention candidate (src/kernels/attention_decode.cuh): the split launch and its
// combine, the cluster launch (one cluster of split blocks per kv head), or the single launch; each
// with the token's QK-norm / RoPE / KV append first when the region opens with them. A sliding
// window, f32 norm weights, norms over the whole projection and a RoPE scale add their lines only
// where the match has them, so other regions render as before.
#include <bit>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "codegen/render.h"
#include "codegen/renderers/renderer.h"
#include "codegen/renderers/rope_table.h"
#include "plan/families/attention_decode.h"

namespace agentcompile::codegen {

namespace {

std::string render_attention_decode(const plan::AttentionDecodeConfig& config, const std::vector<plan::Launch>& launches) {
  const plan::AttentionDecodeMatch& m = config.match;
  const plan::AttentionDecodeSchedule& p = config.schedule;
  const std::string T = cuda_type(m.dtype);
  const int64_t NH = m.NH, KV = m.KV, D = m.D, splits = p.splits;
  const bool cluster = p.cluster;
  const bool partials = config.partials();  // the two-launch split writes partials to the workspace
  const bool prologue = m.prologue.has_value();  // QK-norm / RoPE / KV append of the token first
  const bool norm_f32 = prologue && m.prologue->norm_f32;  // the QK-norm weights are f32
  const bool whole_norm = m.whole_norm();  // the QK-norms are over whole projections
  const std::string W = norm_f32 ? "float" : T;
  const float scale = m.scale;
  char scale_log2[64];
  std::snprintf(scale_log2, sizeof(scale_log2), "%af",
                static_cast<double>(static_cast<float>(static_cast<double>(scale) * 1.4426950408889634)));
  const std::string workspace_acc = "static_cast<float*>(a.workspace)";
  std::ostringstream params;
  params << "  ac::AttentionDecodeParams<" << (norm_f32 ? template_args({{"T", T}, {"W", "float"}}) : template_args({{"T", T}})) << "> p;\n"
         << "  p.q = " << slot_pointer(m.q, T, true) << ";  // [" << NH << ", " << D << "]\n"
         << "  p.k = " << slot_pointer(m.k, T, true) << ";  // [L, " << KV << ", " << D << "]\n"
         << "  p.v = " << slot_pointer(m.v, T, true) << ";  // [L, " << KV << ", " << D << "]\n"
         << "  p.pos = " << slot_pointer(m.pos, "int", true) << ";\n"
         << "  p.out = " << slot_pointer(m.out, T, false) << ";  // [" << NH << ", " << D << "]\n"
         << "  p.partial_acc = " << (partials ? workspace_acc : "nullptr") << ";  // [" << NH << ", " << splits << ", " << D
         << "]\n"
         << "  p.partial_ml = " << (partials ? workspace_acc + " + " + std::to_string(NH * splits * D) : "nullptr")
         << ";  // [" << NH << ", " << splits << ", 2]\n"
         << "  p.scale_log2 = " << scale_log2 << ";  // scale " << scale << " * log2(e)\n"
         << "  p.L = a.L;\n";
  if (prologue) {
    const plan::AttentionPrologue& pro = *m.prologue;
    params << "  p.k_new = " << slot_pointer(pro.k_in, T, true) << ";  // [" << KV << ", " << D << "] raw key row\n"
           << "  p.v_new = " << slot_pointer(pro.v_in, T, true) << ";  // [" << KV << ", " << D << "]\n"
           << "  p.q_norm = " << slot_pointer(pro.q_norm, W, true) << ";  // [" << (whole_norm ? NH * D : D) << "]\n"
           << "  p.k_norm = " << slot_pointer(pro.k_norm, W, true) << ";  // [" << (whole_norm ? KV * D : D) << "]\n"
           << "  p.inv_freq = " << (pro.rope ? "ac_inv_freq" : "nullptr") << ";\n"
           << "  p.norm_eps = " << float_literal(static_cast<float>(pro.eps)) << ";\n"
           << "  p.k_cache = " << slot_pointer(m.k, T, false) << ";\n"
           << "  p.v_cache = " << slot_pointer(m.v, T, false) << ";\n";
    if (pro.rope && pro.rope->scale != 1.f) params << "  p.rope_scale = " << float_literal(pro.rope->scale) << ";\n";
  } else {
    params << "  p.k_new = nullptr;\n  p.v_new = nullptr;\n  p.q_norm = nullptr;\n  p.k_norm = nullptr;\n"
           << "  p.inv_freq = nullptr;\n  p.norm_eps = 0.f;\n  p.k_cache = nullptr;\n  p.v_cache = nullptr;\n";
  }

  if (m.window > 0) params << "  p.window = " << m.window << ";  // sliding window\n";
  // decode_batch's per-row form: each launch works on its row's view (blockIdx.z).
  const bool rows = m.rows();
  if (rows) params << "  const int* base = " << slot_pointer(m.base, "int", true) << ";  // [T] each row's first cache row\n";
  const std::string view = rows ? "ac::attention_decode_row<" + template_args({{"NH", NH}, {"KV", KV}, {"D", D}, {"SPLITS", splits}}) + ">(p, base)"
                                : std::string("p");
  const std::string name = launches.front().kernel;
  std::vector<TemplateArg> split_args = {{"T", T},          {"D", D},          {"KV", KV},           {"GROUP", m.group()},
                                         {"THREADS", p.threads}, {"UNROLL", p.unroll}, {"PREFETCH", p.prefetch ? "true" : "false"},
                                         {"CHUNK", p.chunk}, {"SPLITS", splits}, {"CLUSTER", cluster ? "true" : "false"},
                                         {"PROLOGUE", prologue ? "true" : "false"}};
  if (whole_norm) split_args.push_back({"WHOLE_NORM", "true"});
  std::ostringstream src;
  src << "// " << name << ": generated by agentcompile from attention_decode.cuh\n"
      << "#include \"common.cuh\"\n#include \"attention_decode.cuh\"\n\n"
      << (prologue && m.prologue->rope ? rope_inv_freq_table(*m.prologue->rope, D) : "")
      << "extern \"C\" __global__ void __launch_bounds__(" << p.threads << ") "
      << (cluster ? "__cluster_dims__(" + std::to_string(splits) + ", 1, 1) " : "") << name << "(const ac::RegionArgs a) {\n"
      << params.str() << "  ac::attention_decode_split<" << template_args(split_args) << ">(" << view << ");\n}\n";
  if (partials) {
    src << "\nextern \"C\" __global__ void __launch_bounds__(128) " << launches.at(1).kernel << "(const ac::RegionArgs a) {\n"
        << params.str() << "  ac::attention_decode_combine<" << template_args({{"T", T}, {"D", D}, {"CHUNK", p.chunk}, {"SPLITS", splits}})
        << ">(" << view << ");\n}\n";
  }
  return src.str();
}

}  // namespace

AC_REGISTER_RENDERER(attention_decode, plan::AttentionDecodeConfig, render_attention_decode, ProducerWait::kInTemplate)

}  // namespace agentcompile::codegen
