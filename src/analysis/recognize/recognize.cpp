// The recognition driver: runs the passes in the order recognize.h documents.
#include "analysis/recognize/recognize.h"

#include <map>

#include "analysis/recognize/passes.h"
#include "ir/verifier.h"

namespace agentcompile::analysis {

namespace {

using Pass = Expected<int> (*)(ir::Module&);

struct NamedPass {
  const char* name;
  Pass run;
};

constexpr NamedPass kRaisingRound[] = {
    {"simplify", recognize::simplify},
    {"unit_batch", recognize::drop_unit_batch},
    {"sink_transposes", recognize::sink_transposes},
    {"linear", recognize::raise_linear},
    {"rmsnorm", recognize::raise_rmsnorm},
    {"softmax", recognize::raise_softmax},
    {"activations", recognize::raise_activations},
    {"rope", recognize::raise_rope},
    {"kv_append", recognize::raise_kv_append},
    {"attention", recognize::raise_cache_attention},
    {"fused_projection", recognize::split_fused_projections},
    {"sink_slices", recognize::sink_slices},
};

// A round can only shrink or raise the graph, so a fixed point comes within a few rounds; the cap
// turns a rule that undoes another into an error instead of a hang.
constexpr int kMaxRounds = 32;

class Driver {
 public:
  explicit Driver(RecognizeReport* report) : report_(report) {}

  Status run(const NamedPass& pass, ir::Module& module) {
    auto fired = pass.run(module);
    if (!fired) return fired.status().with_context(std::string("recognize: pass ") + pass.name);
    if (*fired > 0) counts_[pass.name] += *fired;
    last_fired_ = *fired;
    return Status::ok();
  }

  Status to_fixed_point(ir::Module& module) {
    for (int round = 0; round < kMaxRounds; ++round) {
      bool changed = false;
      for (const NamedPass& pass : kRaisingRound) {
        AC_TRY(run(pass, module));
        changed |= last_fired_ > 0;
      }
      if (!changed) return Status::ok();
    }
    return error(ErrorCode::kInternal, "recognize: no fixed point after " + std::to_string(kMaxRounds) + " rounds");
  }

  void finish() {
    if (!report_) return;
    for (const auto& [name, count] : counts_) report_->fired.emplace_back(name, count);
  }

 private:
  RecognizeReport* report_;
  std::map<std::string, int> counts_;
  int last_fired_ = 0;
};

// The ops the graph builders and the semantic kernel families speak; anything else left in a raised
// module is reported as primitive (it compiles through the generic families).
bool is_semantic(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kWeight:
    case ir::OpKind::kEmbedding:
    case ir::OpKind::kLinear:
    case ir::OpKind::kAdd:
    case ir::OpKind::kMul:
    case ir::OpKind::kSilu:
    case ir::OpKind::kGelu:
    case ir::OpKind::kCast:
    case ir::OpKind::kRmsNorm:
    case ir::OpKind::kLayerNorm:
    case ir::OpKind::kRope:
    case ir::OpKind::kReshape:
    case ir::OpKind::kView:
    case ir::OpKind::kSlice:
    case ir::OpKind::kKvAppend:
    case ir::OpKind::kAttention:
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax:
      return true;
    default:
      return false;
  }
}

// One note per function that kept primitive ops: how many of each, and where the first came from.
void note_primitives(const ir::Module& module, RecognizeReport* report) {
  if (!report) return;
  for (const ir::Function& function : module.functions) {
    std::map<std::string, std::pair<int, std::string>> kept;
    for (const ir::Node& node : function.nodes) {
      if (is_semantic(node.op)) continue;
      auto& [count, loc] = kept[std::string(ir::op_name(node.op))];
      if (count++ == 0) loc = node.loc;
    }
    if (kept.empty()) continue;
    std::string note = "@" + function.name + " keeps primitive ops:";
    for (const auto& [op, entry] : kept)
      note += " " + op + " x" + std::to_string(entry.first) + (entry.second.empty() ? "" : " (first at " + entry.second + ")") + ";";
    note.pop_back();
    report->notes.push_back(note);
  }
}

}  // namespace

Expected<ir::Module> recognize_module(ir::Module module, RecognizeReport* report) {
  AC_TRY(ir::verify_module(module).with_context("recognize: the input module"));
  Driver driver(report);
  AC_TRY(driver.to_fixed_point(module));
  AC_TRY(driver.run({"hoist_weights", recognize::hoist_weight_expressions}, module));
  AC_TRY(driver.run({"lower_sdpa", recognize::lower_sdpa}, module));
  AC_TRY(driver.run({"split_long_reductions", recognize::split_long_reductions}, module));
  AC_TRY(driver.run({"reduce_without_transposes", recognize::reduce_without_transposes}, module));
  AC_TRY(driver.run({"reshape_pointwise_inputs", recognize::reshape_pointwise_inputs}, module));
  AC_TRY(driver.run({"widen_divided_sums", recognize::widen_divided_sums}, module));
  AC_TRY(driver.to_fixed_point(module));
  AC_TRY(driver.run({"recompute_widening_casts", recognize::recompute_widening_casts}, module));
  AC_TRY(driver.run({"schedule", recognize::schedule_module}, module));
  AC_TRY(ir::verify_module(module).with_context("recognize: the raised module"));
  driver.finish();
  note_primitives(module, report);
  return module;
}

}  // namespace agentcompile::analysis
