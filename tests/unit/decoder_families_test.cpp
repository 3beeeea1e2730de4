// The decoder families on the architectures with no builder, without a GPU: the Gemma-3, Phi-3 and
// OLMo-2 layers of decoder_modules.h (written in the semantic IR a recognized capture has) form the
// regions of the golden listings, and every region lands on a fast family (GEMV with its norm
// prologue and gated epilogue, decode attention with its prologue, rope_kv, the row families, the
// mma prefill attention where its tiles allow) with the facts each new feature needs: sliding
// windows, head dims 96 and 256, f32 norm weights, norms over the whole q/k projection, GELU gates
// applied in f32 between casts, RoPE tables and scales. Small modules pin the gated-epilogue
// matcher's variants. Every candidate renders and compiles with NVRTC for sm_90a and sm_80.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "analysis/regions.h"
#include "analysis/summary.h"
#include "codegen/nvrtc_compiler.h"
#include "codegen/render.h"
#include "decoder_modules.h"
#include "golden.h"
#include "ir/verifier.h"
#include "plan/families/attention_decode.h"
#include "plan/families/gemv.h"
#include "plan/families/rope_params.h"
#include "plan/planner.h"
#include "nvrtc_expect.h"

namespace agentcompile {
namespace {

ir::Module parse(const testing::DecoderModule& dm) {
  auto module = ir::parse_module(dm.text, dm.name);
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << dm.text;
  if (!module) return {};
  const Status verified = ir::verify_module(*module);
  EXPECT_TRUE(verified.is_ok()) << dm.name << ": " << verified.message();
  return std::move(module).value();
}

ir::Module module_named(const std::string& name, ir::DType dtype) {
  for (const auto& dm : testing::decoder_modules(dtype))
    if (dm.name == name) return parse(dm);
  ADD_FAILURE() << "no module " << name;
  return {};
}

std::vector<plan::RegionPlan> plan_all(const ir::Module& module, const std::string& function_name, const std::string& device) {
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  auto unique = analysis::unique_regions(module, function, partition, {function_name == "decode" ? 1 : 512, 4096});
  auto profile = plan::named_device_profile(device);
  return plan::plan_function(module, function, partition, unique, *profile, plan::PlannerOptions{});
}

bool matched(const plan::RegionPlan& plan, const std::string& family) {
  return std::find(plan.families_matched.begin(), plan.families_matched.end(), family) != plan.families_matched.end();
}

const plan::Candidate* first_of(const plan::RegionPlan& plan, const std::string& family) {
  for (const auto& c : plan.candidates)
    if (c.family == family) return &c;
  return nullptr;
}

// The plans of one category in a function, in unique-region order.
std::vector<const plan::RegionPlan*> of_category(const std::vector<plan::RegionPlan>& plans, analysis::Category category) {
  std::vector<const plan::RegionPlan*> out;
  for (const auto& plan : plans)
    if (plan.summary.category == category) out.push_back(&plan);
  return out;
}

// One line per unique region: category, sites, ops, the families that matched and the first
// candidate's kernel name.
std::string plan_listing(const ir::Module& module, const std::string& function_name) {
  const ir::Function& function = *module.find_function(function_name);
  auto partition = analysis::form_regions(module, function);
  std::ostringstream out;
  out << "function " << function_name << ": " << partition.regions.size() << " regions\n";
  for (const auto& plan : plan_all(module, function_name, "h200")) {
    out << "r" << plan.unique_id << " " << analysis::category_name(plan.summary.category) << " x" << plan.sites.size() << ":";
    for (int node : partition.regions[static_cast<size_t>(plan.sites.front())].nodes)
      out << " " << ir::op_name(function.nodes[static_cast<size_t>(node)].op);
    out << "\n  families:";
    for (const auto& family : plan.families_matched) out << " " << family;
    out << "\n  first: " << (plan.candidates.empty() ? "UNPLANNED " + plan.unplanned_reason : plan.candidates.front().name()) << "\n";
  }
  return out.str();
}

// The fast family that must implement each category of these layers.
const std::map<analysis::Category, std::string>& fast_family() {
  static const std::map<analysis::Category, std::string> families = {
      {analysis::Category::kGemv, "gemv"},
      {analysis::Category::kGemvEpilogue, "gemv"},
      {analysis::Category::kGemm, "gemm"},
      {analysis::Category::kGemmEpilogue, "gemm"},
      {analysis::Category::kAttentionDecode, "attention_decode"},
      {analysis::Category::kAttentionPrefill, "attention_prefill"},
      {analysis::Category::kRopeKvAppend, "rope_kv"},
      {analysis::Category::kRmsNorm, "rmsnorm"},
  };
  return families;
}

TEST(DecoderFamilies, RegionListingsAreGolden) {
  for (const auto& dm : testing::decoder_modules(ir::DType::kBF16)) {
    const ir::Module module = parse(dm);
    if (module.functions.empty()) continue;
    testing::expect_golden("regions_" + dm.name + ".txt", plan_listing(module, "decode") + plan_listing(module, "prefill"));
  }
}

TEST(DecoderFamilies, EveryRegionLandsOnItsFastFamily) {
  for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16})
    for (const auto& dm : testing::decoder_modules(dtype)) {
      const ir::Module module = parse(dm);
      for (const char* function : {"decode", "prefill"})
        for (const auto& plan : plan_all(module, function, "h200")) {
          SCOPED_TRACE(dm.name + " " + std::string(ir::dtype_name(dtype)) + " " + function + " r" + std::to_string(plan.unique_id));
          ASSERT_FALSE(plan.candidates.empty()) << plan.unplanned_reason;
          auto it = fast_family().find(plan.summary.category);
          ASSERT_NE(it, fast_family().end()) << "unexpected category " << analysis::category_name(plan.summary.category);
          EXPECT_TRUE(matched(plan, it->second)) << it->second << " does not match";
          EXPECT_EQ(plan.candidates.front().family, it->second) << "the first candidate " << plan.candidates.front().name();
        }
    }
}

TEST(DecoderFamilies, GemmaWindowHeadDim256AndF32Norms) {
  const ir::Module module = module_named("gemma3", ir::DType::kBF16);
  const auto decode = plan_all(module, "decode", "h200");
  const auto attention = of_category(decode, analysis::Category::kAttentionDecode);
  ASSERT_EQ(attention.size(), 2u);  // the local and the global layer
  for (size_t layer = 0; layer < 2; ++layer) {
    const plan::Candidate* c = first_of(*attention[layer], "attention_decode");
    ASSERT_NE(c, nullptr);
    const plan::Match& m = c->match;
    EXPECT_EQ(m.facts.at("D"), 256);
    EXPECT_EQ(m.facts.at("group"), 4);
    EXPECT_EQ(m.facts.at("qk_norm"), 1);
    EXPECT_EQ(m.facts.at("norm_f32"), 1);
    EXPECT_EQ(m.facts.count("q_norm_width"), 0u) << "Gemma's QK-norm is per head";
    EXPECT_EQ(m.facts.count("window"), layer == 0 ? 1u : 0u);
    if (layer == 0) {
      EXPECT_EQ(m.facts.at("window"), 512);
    }
    EXPECT_EQ(std::bit_cast<double>(m.facts.at("rope_theta_bits")), layer == 0 ? 10000.0 : 1000000.0);
    EXPECT_NE(c->name().find(layer == 0 ? "_qknorm_wf32_rope_theta10000_append_win512_" : "_qknorm_wf32_rope_theta1000000_append_t"),
              std::string::npos)
        << c->name();
    // The reference family takes the same region, window and all.
    const plan::Candidate* reference = first_of(*attention[layer], "attention_reference");
    ASSERT_NE(reference, nullptr);
    EXPECT_EQ(reference->name().find("_win512") != std::string::npos, layer == 0) << reference->name();
    auto source = codegen::render_source(*c);
    ASSERT_TRUE(source.has_value()) << source.status().to_string();
    EXPECT_NE(source->find("ac::AttentionDecodeParams</*T=*/__nv_bfloat16, /*W=*/float> p;"), std::string::npos);
    EXPECT_EQ(source->find("p.window = 512;") != std::string::npos, layer == 0);
  }
  // Every norm before a linear is its prologue, with f32 weights; the gate is GELU(tanh), also where
  // the graph applies it in f32 between casts (the global layer).
  // Where a post-norm and its residual add come before the norm (every one but layer 0's QKV),
  // they are a residual-norm prologue, and h, which the next residual add reads, is an output.
  int norm_prologues = 0, residual_norm_prologues = 0;
  std::set<std::string> gates;
  for (const auto* plan : of_category(decode, analysis::Category::kGemvEpilogue)) {
    const plan::Candidate* c = first_of(*plan, "gemv");
    ASSERT_NE(c, nullptr);
    if (c->match.facts.count("norm")) {
      ++norm_prologues;
      EXPECT_EQ(c->match.facts.at("norm_f32"), 1) << c->name();
    }
    if (c->match.facts.count("post_norm")) {
      ++residual_norm_prologues;
      EXPECT_EQ(c->match.roles.at("h"), "out0") << c->name();
      EXPECT_EQ(c->match.roles.at("skip"), "in1") << c->name();
      EXPECT_NE(c->name().find("gemv_rmsnorm_add_rmsnorm_"), std::string::npos) << c->name();
    }
    if (c->match.variant == "gate_up") {
      gates.insert(c->name());
      EXPECT_EQ(plan::config_as<plan::GemvConfig>(*c)->match.gate_act, plan::GateActivation::kGeluTanh) << c->name();
      EXPECT_EQ(c->match.out_dtype, ir::DType::kBF16);
      const plan::Candidate* library = first_of(*plan, "cublas");
      ASSERT_NE(library, nullptr);
      auto source = codegen::render_source(*library);
      ASSERT_TRUE(source.has_value());
      EXPECT_NE(source->find("/*KIND=*/ac::kEpilogueGateUp, /*ACT=*/ac::kActGeluTanh>(p)"), std::string::npos) << *source;
      EXPECT_NE(source->find("ac::ResidualNormParams</*T=*/__nv_bfloat16, /*W=*/float> p;"), std::string::npos) << *source;
    }
  }
  EXPECT_EQ(norm_prologues, 4) << "input norms (QKV, layer 0 alone) and pre-feedforward norms (gate/up) of the layers";
  EXPECT_EQ(residual_norm_prologues, 3) << "the post-norms of both layers' attention and layer 0's feedforward";
  // Two gate/up regions (the global layer's has casts), one kernel: the casts change nothing it computes.
  EXPECT_EQ(gates.size(), 1u);
  // The last post-norm and its residual add (no linear reads it here) stay a row region.
  for (const auto* plan : of_category(decode, analysis::Category::kRmsNorm)) {
    const plan::Candidate* c = first_of(*plan, "rmsnorm");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->match.variant, "fused") << c->name();
    EXPECT_NE(c->name().find("rmsnorm_rmsnorm_add_"), std::string::npos) << c->name();
  }
  // Prefill: the GEMM's gated epilogue and the head-dim-256 attention on the SIMT kernel (the mma
  // tiles do not fit 256), windowed in the local layer.
  const auto prefill = plan_all(module, "prefill", "h200");
  for (const auto* plan : of_category(prefill, analysis::Category::kGemmEpilogue)) {
    const plan::Candidate* c = first_of(*plan, "gemm");
    ASSERT_NE(c, nullptr);
    if (c->match.variant == "gate_up") {
      EXPECT_NE(c->name().find("gate_up_gelu_tanh_bf16"), std::string::npos) << c->name();
    }
  }
  const auto prefill_attention = of_category(prefill, analysis::Category::kAttentionPrefill);
  ASSERT_EQ(prefill_attention.size(), 2u);
  for (const auto* plan : prefill_attention)
    for (const auto& c : plan->candidates)
      if (c.family == "attention_prefill") {
        EXPECT_TRUE(c.params.count("fallback")) << c.name() << ": no mma tiles at D = 256";
      }
  EXPECT_NE(first_of(*prefill_attention[0], "attention_prefill")->name().find("_win512_"), std::string::npos);
}

// The layers as the recognizer raises a captured Gemma-3 (norms in f32 between casts, the decode
// query normed head-first) plan onto the very kernels of the folded form: the casts are relabels, the
// layouts the same bytes. Only the row regions differ (their programs carry the casts).
TEST(DecoderFamilies, RaisedGemmaPlansLikeTheFoldedForm) {
  for (ir::DType dtype : {ir::DType::kBF16, ir::DType::kF16}) {
    const ir::Module folded = module_named("gemma3", dtype), raised = module_named("gemma3_raised", dtype);
    for (const char* function : {"decode", "prefill"}) {
      auto kernels = [&](const ir::Module& module) {
        std::set<std::string> names;
        for (const auto& plan : plan_all(module, function, "h200")) {
          EXPECT_FALSE(plan.candidates.empty()) << module.name << " " << function << " r" << plan.unique_id << ": " << plan.unplanned_reason;
          if (!plan.candidates.empty() && plan.summary.category != analysis::Category::kRmsNorm)
            names.insert(plan.candidates.front().name());
        }
        return names;
      };
      EXPECT_EQ(kernels(raised), kernels(folded)) << function;
    }
    const ir::Function& decode = *raised.find_function("decode");
    EXPECT_EQ(analysis::form_regions(raised, decode).regions.size(), analysis::form_regions(folded, *folded.find_function("decode")).regions.size());
  }
}

TEST(DecoderFamilies, Phi3HeadDim96AndWindow2047) {
  const ir::Module module = module_named("phi3", ir::DType::kF16);
  const auto decode = plan_all(module, "decode", "h200");
  const auto attention = of_category(decode, analysis::Category::kAttentionDecode);
  ASSERT_EQ(attention.size(), 1u);
  bool split = false, cluster = false, single = false;
  for (const auto& c : attention[0]->candidates) {
    if (c.family != "attention_decode") continue;
    EXPECT_EQ(c.match.facts.at("D"), 96);
    EXPECT_EQ(c.match.facts.at("window"), 2047);
    EXPECT_NE(c.name().find("_h32x32_d96_rope_theta10000_append_win2047_"), std::string::npos) << c.name();
    const int64_t splits = c.params.at("splits");
    split |= splits > 1 && c.params.at("cluster") == 0;
    cluster |= c.params.at("cluster") != 0;
    single |= splits == 1;
    if (splits > 1 && c.params.at("cluster") == 0) {
      EXPECT_EQ(c.launches.at(1).grid_y.at(1), 3) << "combine: D/32 column blocks";
    }
  }
  EXPECT_TRUE(split && cluster && single) << "every form of the decode attention at D = 96";
  // Prefill: the mma kernel at D = 96 (rows padded to a 128-element pitch in shared memory), windowed.
  const auto prefill = plan_all(module, "prefill", "h200");
  const auto prefill_attention = of_category(prefill, analysis::Category::kAttentionPrefill);
  ASSERT_EQ(prefill_attention.size(), 1u);
  const plan::Candidate* mma = first_of(*prefill_attention[0], "attention_prefill");
  ASSERT_NE(mma, nullptr);
  EXPECT_FALSE(mma->params.count("fallback")) << mma->name();
  EXPECT_NE(mma->name().find("attention_prefill_mma_f16_h32_kv32_d96_win2047_"), std::string::npos) << mma->name();
  const int64_t block_m = mma->params.at("block_m"), block_n = mma->params.at("block_n"), stages = mma->params.at("stages");
  EXPECT_EQ(mma->launches.front().shared_bytes, (block_m + 2 * stages * block_n) * 128 * 2);
  // rope_kv at D = 96: 48 elements per half row, lanes padded to a power of two.
  const auto rope = of_category(prefill, analysis::Category::kRopeKvAppend);
  ASSERT_EQ(rope.size(), 1u);
  std::set<int64_t> vecs;
  for (const auto& c : rope[0]->candidates) {
    if (c.family != "rope_kv") continue;
    const int64_t vec = c.params.at("vec"), lanes = plan::rope_row_lanes(96, vec);
    vecs.insert(vec);
    EXPECT_EQ(lanes, vec == 2 ? 32 : vec == 4 ? 16 : 8) << c.name();
    EXPECT_EQ(c.launches.front().grid_x.at(5), (5 * 96 + c.params.at("threads") / lanes - 1) / (c.params.at("threads") / lanes));
  }
  EXPECT_EQ(vecs, (std::set<int64_t>{2, 4, 8}));
}

TEST(DecoderFamilies, RopeTablesAreNamedByTheirDigestAndRendered) {
  const ir::Module table = module_named("phi3_table", ir::DType::kBF16);
  const ir::Module theta = module_named("phi3", ir::DType::kBF16);
  const auto table_plans = plan_all(table, "decode", "h200");
  const auto attention = of_category(table_plans, analysis::Category::kAttentionDecode);
  ASSERT_EQ(attention.size(), 1u);
  const plan::Candidate* c = first_of(*attention[0], "attention_decode");
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->match.facts.at("rope_table"), 48);
  EXPECT_EQ(c->match.facts.count("rope_theta_bits"), 0u);
  const plan::RopeSpec& rope = *plan::config_as<plan::AttentionDecodeConfig>(*c)->match.prologue->rope;
  EXPECT_EQ(rope.scale, 1.19f);
  const std::string name = plan::rope_name(rope);
  EXPECT_EQ(name.rfind("invf", 0), 0u) << name;
  EXPECT_NE(name.find("_sc3f9851ec"), std::string::npos) << name;  // 1.19f
  EXPECT_NE(c->name().find("_rope_" + name + "_append_"), std::string::npos) << c->name();
  auto source = codegen::render_source(*c);
  ASSERT_TRUE(source.has_value()) << source.status().to_string();
  for (int i : {0, 11, 12, 47}) {
    const float entry = 1.0f / std::pow(10000.0f, static_cast<float>(2 * i) / 96.0f) / (i < 12 ? 1.0f : 1.5f);
    char literal[64];
    std::snprintf(literal, sizeof(literal), "%af", static_cast<double>(entry));
    EXPECT_NE(source->find(literal), std::string::npos) << "inv_freq[" << i << "] = " << literal;
  }
  EXPECT_NE(source->find("p.rope_scale = "), std::string::npos);
  // The prefill's rope_kv kernel carries the same table and scale.
  for (const auto& plan : plan_all(table, "prefill", "h200")) {
    const plan::Candidate* rope = first_of(plan, "rope_kv");
    if (!rope) continue;
    EXPECT_NE(rope->name().find("_" + name + "_v"), std::string::npos) << rope->name();
    auto rope_source = codegen::render_source(*rope);
    ASSERT_TRUE(rope_source.has_value());
    EXPECT_NE(rope_source->find("p.rope_scale = "), std::string::npos);
  }
  // Another table is another kernel; the parametric form keeps its theta name.
  std::vector<float> other_table = *rope.table;
  other_table[7] = std::bit_cast<float>(std::bit_cast<uint32_t>(other_table[7]) ^ 1);
  plan::RopeSpec other = rope;
  other.table = other_table;
  EXPECT_NE(plan::rope_name(other), name);
  const auto theta_plans = plan_all(theta, "decode", "h200");
  const auto theta_attention = of_category(theta_plans, analysis::Category::kAttentionDecode);
  ASSERT_EQ(theta_attention.size(), 1u);
  const auto* theta_config = plan::config_as<plan::AttentionDecodeConfig>(*first_of(*theta_attention[0], "attention_decode"));
  EXPECT_EQ(plan::rope_name(*theta_config->match.prologue->rope), "theta10000");
}

TEST(DecoderFamilies, OlmoNormsOverTheWholeProjection) {
  const ir::Module module = module_named("olmo2", ir::DType::kBF16);
  const auto decode = plan_all(module, "decode", "h200");
  const auto attention = of_category(decode, analysis::Category::kAttentionDecode);
  ASSERT_EQ(attention.size(), 1u);
  for (const char* family : {"attention_decode", "attention_reference"}) {
    const plan::Candidate* c = first_of(*attention[0], family);
    ASSERT_NE(c, nullptr) << family;
    EXPECT_EQ(c->match.facts.at("q_norm_width"), 2048) << family;
    EXPECT_EQ(c->match.facts.at("k_norm_width"), 2048) << family;
    EXPECT_EQ(c->match.facts.count("norm_f32"), 0u);
    EXPECT_NE(c->name().find("_qknormfull_rope_theta500000_append"), std::string::npos) << c->name();
    auto source = codegen::render_source(*c);
    ASSERT_TRUE(source.has_value()) << source.status().to_string();
    if (std::string(family) == "attention_decode")
      EXPECT_NE(source->find("/*PROLOGUE=*/true, /*WHOLE_NORM=*/true>(p);"), std::string::npos) << "the prologue with WHOLE_NORM:\n" << *source;
    else
      EXPECT_NE(source->find("norm_width = 2048;"), std::string::npos) << "the rope_kv prologue launch:\n" << *source;
  }
  // The post-norms and the residual adds are row regions; the decode layer is 6 launches.
  EXPECT_EQ(of_category(decode, analysis::Category::kRmsNorm).size(), 1u);
  const ir::Function& function = *module.find_function("decode");
  EXPECT_EQ(analysis::form_regions(module, function).regions.size(), 7u);
  // Prefill: the whole-projection norms inside the rope_kv kernel.
  const auto prefill = plan_all(module, "prefill", "h200");
  const auto rope = of_category(prefill, analysis::Category::kRopeKvAppend);
  ASSERT_EQ(rope.size(), 1u);
  const plan::Candidate* c = first_of(*rope[0], "rope_kv");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->match.facts.at("norm_width0"), 2048);
  EXPECT_EQ(c->match.facts.at("norm_width1"), 2048);
  EXPECT_EQ(c->match.facts.count("norm_width2"), 0u);
  EXPECT_EQ(c->match.roles.at("x0").rfind("in", 0), 0u);
}

// The GEMV's gate/up match of a region [1, 256] -> gate, up [1, 512] -> `epilogue` lines (the linears
// are %g and %u), or nullopt when the linears' region is not a gated product.
// The gemv candidate of the linears' region (its record, and the serialized match).
std::optional<plan::Candidate> gate_up_candidate(const std::string& epilogue, const std::string& first = "gate") {
  std::ostringstream text;
  text << "module m {\n  param @gate : f16[512, 256]\n  param @up : f16[512, 256]\n"
       << "  func @f(%x: f16[1, 256]) -> (f16[1, 512]) {\n"
       << "    %gw = weight {name = \"gate\"} : f16[512, 256]\n    %uw = weight {name = \"up\"} : f16[512, 256]\n";
  if (first == "gate")
    text << "    %g = linear(%x, %gw) : f16[1, 512]\n    %u = linear(%x, %uw) : f16[1, 512]\n";
  else
    text << "    %u = linear(%x, %uw) : f16[1, 512]\n    %g = linear(%x, %gw) : f16[1, 512]\n";
  text << epilogue << "  }\n}\n";
  auto module = ir::parse_module(text.str());
  EXPECT_TRUE(module.has_value()) << module.status().to_string() << "\n" << text.str();
  if (!module) return std::nullopt;
  const auto plans = plan_all(*module, "f", "h200");
  const plan::Candidate* c = plans.empty() ? nullptr : first_of(plans[0], "gemv");  // the linears' region
  if (!c || c->match.variant != "gate_up") return std::nullopt;
  return *c;
}

TEST(DecoderFamilies, GatedEpilogueVariants) {
  // SiLU as before: no gate_act fact, the old kernel name.
  auto silu = gate_up_candidate("    %a = silu(%g) : f16[1, 512]\n    %y = mul(%a, %u) : f16[1, 512]\n    return %y\n");
  ASSERT_TRUE(silu.has_value());
  EXPECT_EQ(silu->match.variant, "gate_up");
  EXPECT_EQ(silu->match.facts.count("gate_act"), 0u);
  // GELU (erf), the product's operands swapped.
  auto erf = gate_up_candidate("    %a = gelu(%g) {approximate = \"none\"} : f16[1, 512]\n    %y = mul(%u, %a) : f16[1, 512]\n    return %y\n");
  ASSERT_TRUE(erf.has_value());
  EXPECT_EQ(plan::config_as<plan::GemvConfig>(*erf)->match.gate_act, plan::GateActivation::kGeluErf);
  // GELU(tanh) in f32 with the product in f32 too, the up projection first: the gate stays segment 0.
  auto f32 = gate_up_candidate(
      "    %g32 = cast(%g) {dtype = \"f32\"} : f32[1, 512]\n    %a = gelu(%g32) {approximate = \"tanh\"} : f32[1, 512]\n"
      "    %u32 = cast(%u) {dtype = \"f32\"} : f32[1, 512]\n    %p = mul(%a, %u32) : f32[1, 512]\n"
      "    %y = cast(%p) {dtype = \"f16\"} : f16[1, 512]\n    return %y\n",
      "up");
  ASSERT_TRUE(f32.has_value());
  EXPECT_EQ(plan::config_as<plan::GemvConfig>(*f32)->match.gate_act, plan::GateActivation::kGeluTanh);
  EXPECT_EQ(f32->match.out_dtype, ir::DType::kF16);
  EXPECT_EQ(f32->match.roles.at("w0"), "w1") << "the gate weight (declared second in the region) is segment 0";
  EXPECT_EQ(f32->match.roles.at("w1"), "w0");
  // Not a gated product: the up projection left out of the product, or an activation the kernels lack.
  EXPECT_FALSE(gate_up_candidate("    %a = gelu(%g) {approximate = \"tanh\"} : f16[1, 512]\n    %y = mul(%a, %a) : f16[1, 512]\n"
                             "    %z = add(%y, %u) : f16[1, 512]\n    return %z\n")
                   .has_value());
  EXPECT_FALSE(gate_up_candidate("    %a = relu(%g) : f16[1, 512]\n    %y = mul(%a, %u) : f16[1, 512]\n    return %y\n").has_value());
}

void expect_compiles(const std::map<std::string, std::string>& sources, const std::string& arch) {
  std::vector<codegen::CompileJob> jobs;
  for (const auto& [name, source] : sources) jobs.push_back({name, source});
  ASSERT_FALSE(jobs.empty());
  testing::expect_nvrtc_compiles(jobs, arch);
}

TEST(DecoderFamilies, EveryCandidateCompilesWithNvrtc) {
  auto include = codegen::cuda_include_dir();
  if (!include) GTEST_SKIP() << include.status().to_string();
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::map<std::string, std::string> sources;
    for (ir::DType dtype : {ir::DType::kF16, ir::DType::kBF16})
      for (const auto& dm : testing::decoder_modules(dtype)) {
        const ir::Module module = parse(dm);
        for (const char* function : {"decode", "prefill"})
          for (const auto& plan : plan_all(module, function, std::string(arch) == "sm_80" ? "a100" : "h200"))
            for (const auto& c : plan.candidates) {
              if (std::all_of(c.launches.begin(), c.launches.end(), [](const plan::Launch& l) { return l.library; })) continue;
              auto source = codegen::render_source(c);
              ASSERT_TRUE(source.has_value()) << c.name() << ": " << source.status().to_string();
              auto [it, fresh] = sources.emplace(c.name(), *source);
              EXPECT_TRUE(fresh || it->second == *source) << "two sources named " << c.name();
            }
      }
    expect_compiles(sources, arch);
  }
}

}  // namespace
}  // namespace agentcompile
