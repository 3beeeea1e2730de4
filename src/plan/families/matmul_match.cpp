// Matching matmul regions and their epilogues (see matmul_match.h).
#include "plan/families/matmul_match.h"

#include <algorithm>

#include <bit>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace agentcompile::plan {

using ir::OpKind;

namespace {

// The gated epilogue act(gate) * up over the region's nodes [from, size): one activation, one mul and
// casts between float dtypes around them, every node on the path from the two linears' results to
// the last value. Sets the match's gate activation, first output (the last value) and out dtype;
// false when the nodes are anything else.
bool match_gated_epilogue(const RegionContext& ctx, size_t from, ir::ValueId gate, ir::ValueId up, MatmulMatch& m) {
  std::map<ir::ValueId, const ir::Node*> node_of;  // result -> node, for the epilogue's nodes
  for (size_t i = from; i < ctx.size(); ++i) node_of[ctx.node(static_cast<int>(i)).result] = &ctx.node(static_cast<int>(i));
  std::set<const ir::Node*> path;  // the epilogue's nodes met on the way
  // The value under the float casts of the epilogue that produced `v` (kNoValue past a cast to or
  // from an int or bool).
  auto under_casts = [&](ir::ValueId v) {
    for (auto it = node_of.find(v); it != node_of.end() && it->second->op == OpKind::kCast; it = node_of.find(v)) {
      if (!ir::is_float(ctx.function->type(it->second->operands[0]).dtype) || !ir::is_float(ctx.function->type(v).dtype)) return ir::kNoValue;
      path.insert(it->second);
      v = it->second->operands[0];
    }
    return v;
  };
  auto producer = [&](ir::ValueId v) -> const ir::Node* {
    auto it = node_of.find(v);
    return it == node_of.end() ? nullptr : it->second;
  };
  const ir::Node& last = ctx.node(static_cast<int>(ctx.size()) - 1);
  const ir::Node* mul = producer(under_casts(last.result));
  if (!mul || mul->op != OpKind::kMul) return false;
  path.insert(mul);
  const ir::Node* act = nullptr;
  for (size_t side = 0; side < 2 && !act; ++side) {  // the product's operands in either order
    const ir::Node* candidate = producer(under_casts(mul->operands[side]));
    if (candidate && (candidate->op == OpKind::kSilu || candidate->op == OpKind::kGelu) && under_casts(mul->operands[1 - side]) == up)
      act = candidate;
  }
  if (!act) return false;
  path.insert(act);
  if (under_casts(act->operands[0]) != gate || path.size() != ctx.size() - from) return false;
  if (act->op == OpKind::kGelu) {
    const bool tanh = act->string_attr("approximate", "none") == "tanh";
    m.gate_act = tanh ? GateActivation::kGeluTanh : GateActivation::kGeluErf;
  }
  m.segments[0].y = ctx.slot_of(last.result);
  m.out_dtype = ctx.function->type(last.result).dtype;
  return true;
}

}  // namespace

std::optional<MatmulMatch> match_matmul_region(const RegionContext& ctx, TokenCount tokens) {
  if (ctx.region->kind != analysis::RegionKind::kMatmul) return std::nullopt;
  // An RMSNorm prologue: the linears read its result, the region reads its input. Float casts may
  // surround it (a graph that normalizes in f32): each node of the chain reads the one before. A
  // residual-norm prologue puts a post-norm and the residual add before it: the chain's add reads
  // the post-norm's result and the residual stream, and the second norm reads the sum h.
  size_t first_linear = 0;
  const ir::Node* rms = nullptr;
  const ir::Node* post_rms = nullptr;
  const ir::Node* add = nullptr;
  ir::ValueId post_normalized = ir::kNoValue;  // the post-norm chain's result, which the add reads
  for (; first_linear < ctx.size() && ctx.node(static_cast<int>(first_linear)).op != OpKind::kLinear; ++first_linear) {
    const ir::Node& n = ctx.node(static_cast<int>(first_linear));
    const ir::ValueId before = first_linear > 0 ? ctx.node(static_cast<int>(first_linear) - 1).result : ir::kNoValue;
    if (n.op == OpKind::kAdd && first_linear == 0) {  // the add-only form: h = x + skip opens the region
      add = &n;
      continue;
    }
    if (n.op == OpKind::kAdd && rms && !add) {
      if (n.operands[0] != before && n.operands[1] != before) return std::nullopt;
      add = &n;
      post_normalized = before;
      post_rms = rms;
      rms = nullptr;
      continue;
    }
    const bool float_cast = n.op == OpKind::kCast && ir::is_float(ctx.function->type(n.operands[0]).dtype) &&
                            ir::is_float(ctx.function->type(n.result).dtype);
    if (n.op == OpKind::kRmsNorm && !rms) rms = &n;
    else if (!float_cast) return std::nullopt;
    if (first_linear > 0 && n.operands[0] != before) return std::nullopt;
  }
  const bool norm = first_linear > 0;
  if (norm && !rms) return std::nullopt;
  size_t end = first_linear;
  while (end < ctx.size() && ctx.node(static_cast<int>(end)).op == OpKind::kLinear) ++end;
  const size_t linears = end - first_linear;
  if (linears == 0 || linears > 3) return std::nullopt;
  const ir::Node& first = ctx.node(static_cast<int>(first_linear));
  const ir::ValueId x = norm ? ctx.node(0).operands[0] : first.operands[0];
  const ir::ValueId normalized = norm ? ctx.node(static_cast<int>(first_linear) - 1).result : ir::kNoValue;  // what the linears read
  const auto& x_type = ctx.function->type(x);
  if (x_type.shape.size() != 2) return std::nullopt;
  const bool one_token = x_type.shape[0].is_static() && x_type.shape[0].value == 1;
  if (tokens == TokenCount::kOne && !one_token) return std::nullopt;

  MatmulMatch m;
  m.dtype = x_type.dtype;
  m.out_dtype = m.dtype;
  const int64_t K = x_type.shape[1].value;
  if (K % 8 != 0) return std::nullopt;
  m.K = K;
  m.x = ctx.slot_of(x);
  if (norm) {
    const ir::DType w_dtype = ctx.function->type(rms->operands[1]).dtype;
    if (!one_token || (w_dtype != m.dtype && w_dtype != ir::DType::kF32) || ctx.function->type(normalized).dtype != m.dtype ||
        first.operands[0] != normalized)
      return std::nullopt;
    m.norm_f32 = w_dtype != m.dtype;
    m.norm = NormPrologue{ctx.slot_of(rms->operands[1]), static_cast<float>(rms->float_attr("eps"))};
  }
  if (add && !post_rms) {
    // h = x + skip, x the add's first operand (where the region's x is read), 16-bit like the GEMV's
    // rows; h an output where the next residual add reads it.
    const ir::ValueId skip = add->operands[1];
    if (!rms || ir::dtype_size(x_type.dtype) != 2 || ctx.function->type(skip) != x_type || ctx.function->type(add->result) != x_type)
      return std::nullopt;
    m.residual_norm = ResidualNormPrologue{ctx.slot_of(skip), "", ctx.slot_of(add->result), 0.f};
    if (m.residual_norm->skip.empty()) return std::nullopt;
  } else if (add) {
    // h = residual + rmsnorm(x): the residual ("skip") and h of x's type, the post-norm's weights of
    // the same dtype as the second norm's (the kernels take one weight type). h is an output where
    // the next residual add reads it.
    const ir::ValueId skip = add->operands[add->operands[0] == post_normalized ? 1 : 0];
    if (ctx.function->type(skip) != x_type || ctx.function->type(add->result) != x_type ||
        ctx.function->type(post_rms->operands[1]).dtype != ctx.function->type(rms->operands[1]).dtype)
      return std::nullopt;
    m.residual_norm = ResidualNormPrologue{ctx.slot_of(skip), ctx.slot_of(post_rms->operands[1]), ctx.slot_of(add->result),
                                           static_cast<float>(post_rms->float_attr("eps"))};
  }
  int64_t total_rows = 0;
  for (size_t i = 0; i < linears; ++i) {
    const ir::Node& lin = ctx.node(static_cast<int>(first_linear + i));
    if (lin.operands[0] != first.operands[0]) return std::nullopt;  // horizontal fusion reads one input
    const ir::DType w_dtype = ctx.function->type(lin.operands[1]).dtype;
    if (i == 0) m.w_dtype = w_dtype;
    else if (w_dtype != m.w_dtype) return std::nullopt;  // one weight format per kernel
    MatmulSegment& segment = m.segments.emplace_back();
    segment.w = ctx.slot_of(lin.operands[1]);
    if (lin.operands.size() == 3 && (segment.b = ctx.slot_of(lin.operands[2])).empty()) return std::nullopt;  // a bias from inside
    segment.rows = ctx.function->type(lin.result).shape[1].value;
    total_rows += segment.rows;
    segment.y = ctx.slot_of(lin.result);
  }
  m.N = total_rows;

  const size_t rest = ctx.size() - end;
  auto at = [&](size_t i) -> const ir::Node& { return ctx.node(static_cast<int>(first_linear + i)); };
  if (rest == 0) {
    m.epilogue = linears == 1 ? MatmulEpilogue::kPlain : MatmulEpilogue::kMulti;
  } else if (rest == 1 && linears == 1 && at(1).op == OpKind::kCast) {
    m.epilogue = MatmulEpilogue::kPlain;
    m.out_dtype = ctx.function->type(at(1).result).dtype;
    m.segments[0].y = ctx.slot_of(at(1).result);
  } else if (rest == 1 && linears == 1 && at(1).op == OpKind::kAdd) {
    const ir::Node& add = at(1);
    const int mine = add.operands[0] == first.result ? 0 : add.operands[1] == first.result ? 1 : -1;
    if (mine < 0) return std::nullopt;
    const ir::ValueId other = add.operands[static_cast<size_t>(1 - mine)];
    if (ctx.function->type(other).shape != ctx.function->type(add.result).shape) return std::nullopt;  // no broadcast
    m.epilogue = MatmulEpilogue::kResidual;
    m.residual = ctx.slot_of(other);
    if (m.residual.empty()) return std::nullopt;
    m.segments[0].y = ctx.slot_of(add.result);
  } else if (rest >= 2 && linears == 2 && match_gated_epilogue(ctx, end, first.result, at(1).result, m)) {
    if (m.segments[0].rows != m.segments[1].rows) return std::nullopt;
    m.epilogue = MatmulEpilogue::kGateUp;
    m.N = m.segments[0].rows;
    m.segments[1].y.clear();  // up is consumed by the epilogue
  } else if (rest >= 2 && linears == 2 && match_gated_epilogue(ctx, end, at(1).result, first.result, m)) {
    // The up projection came first: the kernels take the gate as segment 0.
    if (m.segments[0].rows != m.segments[1].rows) return std::nullopt;
    std::swap(m.segments[0].w, m.segments[1].w);
    std::swap(m.segments[0].b, m.segments[1].b);
    m.epilogue = MatmulEpilogue::kGateUp;
    m.N = m.segments[0].rows;
    m.segments[1].y.clear();
  } else {
    return std::nullopt;
  }
  // An intermediate that escapes the region (no slot) is not this family's shape.
  if (m.x.empty() || (m.norm && m.norm->w.empty()) ||
      (m.residual_norm && (m.residual_norm->skip.empty() || (post_rms && m.residual_norm->post_w.empty()))))
    return std::nullopt;
  for (size_t i = 0; i < m.segments.size(); ++i)
    if (m.segments[i].w.empty() || (m.segments[i].y.empty() && !(m.epilogue == MatmulEpilogue::kGateUp && i == 1))) return std::nullopt;
  // Every output of the region is one the kernels write: a linear's result that a later region reads
  // besides its cast or residual add (Gemm + BatchNorm reads both the product and its f32 copy) is
  // not an output of these epilogues, and a region that needs it is the general matcher's.
  std::set<std::string> written;
  for (const MatmulSegment& segment : m.segments) written.insert(segment.y);
  if (m.residual_norm) written.insert(m.residual_norm->h);
  for (ir::ValueId out : ctx.region->outputs)
    if (!written.count(ctx.slot_of(out))) return std::nullopt;
  return m;
}

void add_matmul_view(const MatmulMatch& mm, Match& m) {
  m.variant = matmul_epilogue_name(mm.epilogue);
  m.dtype = mm.dtype;
  m.out_dtype = mm.out_dtype;
  m.facts["K"] = mm.K;
  m.facts["N"] = mm.N;
  m.roles["x"] = mm.x;
  if (ir::is_quantized(mm.w_dtype)) m.facts["w_format"] = static_cast<int64_t>(mm.w_dtype);
  if (mm.gate_act != GateActivation::kSilu) m.facts["gate_act"] = static_cast<int64_t>(mm.gate_act);
  if (mm.norm) {
    if (mm.norm_f32) m.facts["norm_f32"] = 1;
    m.roles["norm_w"] = mm.norm->w;
    m.facts["norm"] = 1;
    m.facts["norm_eps_bits"] = std::bit_cast<uint32_t>(mm.norm->eps);
  }
  if (mm.residual_norm) {
    m.roles["skip"] = mm.residual_norm->skip;
    if (!mm.residual_norm->h.empty()) m.roles["h"] = mm.residual_norm->h;
    if (mm.residual_norm->post_norm()) {
      m.roles["post_w"] = mm.residual_norm->post_w;
      m.facts["post_norm"] = 1;
      m.facts["post_eps_bits"] = std::bit_cast<uint32_t>(mm.residual_norm->eps);
    } else {
      m.facts["add_norm"] = 1;
    }
  }
  for (size_t i = 0; i < mm.segments.size(); ++i) {
    const MatmulSegment& segment = mm.segments[i];
    const std::string s = std::to_string(i);
    m.roles["w" + s] = segment.w;
    if (!segment.b.empty()) m.roles["b" + s] = segment.b;
    if (!segment.y.empty()) m.roles["y" + s] = segment.y;
    m.facts["rows" + s] = segment.rows;
  }
  if (!mm.residual.empty()) m.roles["residual"] = mm.residual;
}

std::string matmul_epilogue_name(MatmulEpilogue epilogue) {
  switch (epilogue) {
    case MatmulEpilogue::kPlain: return "plain";
    case MatmulEpilogue::kMulti: return "multi";
    case MatmulEpilogue::kResidual: return "residual";
    case MatmulEpilogue::kGateUp: return "gate_up";
  }
  return "plain";
}

std::string matmul_prologue_tag(const MatmulMatch& match) {
  const char* before = !match.residual_norm ? "" : match.residual_norm->post_norm() ? "rmsnorm_add_" : "add_";
  return std::string(before) + (match.norm ? "rmsnorm_" : "");
}

std::string matmul_epilogue_tag(const MatmulMatch& match) {
  std::string tag;
  switch (match.gate_act) {
    case GateActivation::kSilu: break;
    case GateActivation::kGeluTanh: tag += "_gelu_tanh"; break;
    case GateActivation::kGeluErf: tag += "_gelu"; break;
  }
  if (match.norm_f32) tag += "_wf32";
  // Biases change the generated source (a bias pointer or none): two regions of one shape, one with a
  // bias (tiny llama's o_proj) and one without (its down_proj), must not share a kernel name.
  if (std::any_of(match.segments.begin(), match.segments.end(), [](const MatmulSegment& s) { return !s.b.empty(); })) tag += "_bias";
  return tag;
}

std::string matmul_gate_activation_code(GateActivation act) {
  switch (act) {
    case GateActivation::kSilu: return "ac::kActSilu";
    case GateActivation::kGeluTanh: return "ac::kActGeluTanh";
    case GateActivation::kGeluErf: return "ac::kActGeluErf";
  }
  return "ac::kActSilu";
}

}  // namespace agentcompile::plan
