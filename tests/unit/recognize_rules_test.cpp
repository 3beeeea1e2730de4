// Golden before/after tests of each recognition rule (src/analysis/recognize/): the pass runs on
// tests/golden/recognize/<rule>.before.ir and the result is compared with <rule>.after.ir structurally
// (both parsed, renumbered and printed; AC_UPDATE_GOLDEN=1 rewrites the after file). Every before file
// holds the forms a rule must raise and the ones it must refuse (those functions come back unchanged).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile {
namespace {

namespace rc = analysis::recognize;
using Pass = Expected<int> (*)(ir::Module&);

std::string golden_path(const std::string& file) { return std::string(AC_SOURCE_DIR) + "/tests/golden/recognize/" + file; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ir::Module parse_file(const std::string& path) {
  auto module = ir::parse_module(read_text(path), path);
  EXPECT_TRUE(module.has_value()) << module.status().to_string();
  if (!module) return {};
  EXPECT_TRUE(ir::verify_module(*module).is_ok()) << ir::verify_module(*module).to_string();
  return std::move(module).value();
}

// The text a module is compared by: values renumbered into definition order (names do not matter).
std::string canonical(ir::Module module) {
  for (ir::Function& function : module.functions) function = rc::clean_function(function);
  return ir::print_module(module);
}

// Runs `passes` in order (each to its own fixed point when `repeat`) and checks the golden.
void expect_rule_golden(const std::string& rule, const std::vector<Pass>& passes, bool repeat = false) {
  SCOPED_TRACE(rule);
  ir::Module module = parse_file(golden_path(rule + ".before.ir"));
  for (Pass pass : passes) {
    for (int round = 0; round < 16; ++round) {
      auto fired = pass(module);
      ASSERT_TRUE(fired.has_value()) << fired.status().to_string();
      ASSERT_TRUE(ir::verify_module(module).is_ok()) << ir::verify_module(module).to_string();
      if (!repeat || *fired == 0) break;
    }
  }
  const std::string actual = canonical(module);
  const std::string after = golden_path(rule + ".after.ir");
  const char* update = std::getenv("AC_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(after) << "// " << rule << ".before.ir after its pass (recognize_rules_test; AC_UPDATE_GOLDEN=1 rewrites it).\n" << actual;
    return;
  }
  EXPECT_EQ(canonical(parse_file(after)), actual) << "(AC_UPDATE_GOLDEN=1 rewrites " << after << " after a deliberate change)";
}

TEST(RecognizeRules, Simplify) { expect_rule_golden("simplify", {rc::simplify}); }
TEST(RecognizeRules, UnitBatch) { expect_rule_golden("unit_batch", {rc::drop_unit_batch, rc::simplify}); }
TEST(RecognizeRules, SinkTransposes) { expect_rule_golden("sink_transposes", {rc::sink_transposes, rc::simplify}, true); }
TEST(RecognizeRules, Linear) { expect_rule_golden("linear", {rc::raise_linear}); }
TEST(RecognizeRules, RmsNorm) { expect_rule_golden("rmsnorm", {rc::raise_rmsnorm}); }
TEST(RecognizeRules, Softmax) { expect_rule_golden("softmax", {rc::raise_softmax}); }
TEST(RecognizeRules, Activations) { expect_rule_golden("activations", {rc::raise_activations}); }
TEST(RecognizeRules, Rope) { expect_rule_golden("rope", {rc::raise_rope}); }
TEST(RecognizeRules, KvAppend) { expect_rule_golden("kv_append", {rc::raise_kv_append}); }
TEST(RecognizeRules, CacheAttention) { expect_rule_golden("attention", {rc::raise_cache_attention}); }
TEST(RecognizeRules, LowerSdpa) { expect_rule_golden("lower_sdpa", {rc::lower_sdpa}); }
TEST(RecognizeRules, SplitLongReductions) { expect_rule_golden("split_reductions", {rc::split_long_reductions}); }
TEST(RecognizeRules, ReduceWithoutTransposes) { expect_rule_golden("transposed_reductions", {rc::reduce_without_transposes}); }
TEST(RecognizeRules, ReshapePointwiseInputs) { expect_rule_golden("reshaped_reductions", {rc::reshape_pointwise_inputs}); }
TEST(RecognizeRules, WidenDividedSums) { expect_rule_golden("divided_sums", {rc::widen_divided_sums}); }
TEST(RecognizeRules, RecomputeWideningCasts) { expect_rule_golden("shared_casts", {rc::recompute_widening_casts}); }
TEST(RecognizeRules, HoistWeights) { expect_rule_golden("hoist_weights", {rc::hoist_weight_expressions}); }
TEST(RecognizeRules, FusedProjection) { expect_rule_golden("fused_projection", {rc::split_fused_projections}); }
TEST(RecognizeRules, SinkSlices) { expect_rule_golden("sink_slices", {rc::sink_slices}, true); }
TEST(RecognizeRules, Schedule) { expect_rule_golden("schedule", {rc::schedule_module}); }

// A pass that finds nothing leaves the module exactly as it was (names included) and says so.
TEST(RecognizeRules, NothingToDoChangesNothing) {
  const ir::Module before = parse_file(golden_path("rmsnorm.before.ir"));
  for (Pass pass : {rc::drop_unit_batch, rc::raise_linear, rc::raise_softmax, rc::raise_rope, rc::raise_kv_append,
                    rc::raise_cache_attention, rc::lower_sdpa, rc::split_fused_projections, rc::sink_slices}) {
    ir::Module module = before;
    auto fired = pass(module);
    ASSERT_TRUE(fired.has_value()) << fired.status().to_string();
    EXPECT_EQ(*fired, 0);
    EXPECT_TRUE(module == before);
  }
}

// The raised nodes keep the source line of the node they replace (errors name the model's line).
TEST(RecognizeRules, RaisedNodesKeepTheirSourceLine) {
  auto module = ir::parse_module(R"(module m {
  param @w : f32[64]
  func @f(%x: f32[T, 64]) -> (f32[T, 64]) {
    %sq = mul(%x, %x) : f32[T, 64] loc "model.py:10 in norm"
    %mean = reduce_mean(%sq) {axis = -1, keepdim = 1} : f32[T, 1] loc "model.py:10 in norm"
    %eps = constant {dtype = "f32", shape = [], value = 1e-06} : f32[] loc "model.py:10 in norm"
    %var = add(%mean, %eps) : f32[T, 1] loc "model.py:10 in norm"
    %r = rsqrt(%var) : f32[T, 1] loc "model.py:11 in norm"
    %n = mul(%x, %r) : f32[T, 64] loc "model.py:11 in norm"
    %w = weight {name = "w"} : f32[64] loc "model.py:12 in norm"
    %y = mul(%w, %n) : f32[T, 64] loc "model.py:12 in norm"
    return %y
  }
})");
  ASSERT_TRUE(module.has_value()) << module.status().to_string();
  ASSERT_EQ(*rc::raise_rmsnorm(*module), 1);
  const ir::Function& f = module->functions[0];
  const ir::Node& norm = f.nodes[static_cast<size_t>(f.value(f.results[0]).producer)];
  EXPECT_EQ(norm.op, ir::OpKind::kRmsNorm);
  EXPECT_EQ(norm.loc, "model.py:12 in norm");
}

}  // namespace
}  // namespace agentcompile
