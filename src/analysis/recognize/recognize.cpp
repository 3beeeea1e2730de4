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

}  // namespace

Expected<ir::Module> recognize_module(ir::Module module, RecognizeReport* report) {
  AC_TRY(ir::verify_module(module).with_context("recognize: the input module"));
  Driver driver(report);
  AC_TRY(driver.to_fixed_point(module));
  AC_TRY(driver.run({"hoist_weights", recognize::hoist_weight_expressions}, module));
  AC_TRY(driver.run({"lower_sdpa", recognize::lower_sdpa}, module));
  AC_TRY(driver.to_fixed_point(module));
  AC_TRY(driver.run({"schedule", recognize::schedule_module}, module));
  AC_TRY(ir::verify_module(module).with_context("recognize: the raised module"));
  driver.finish();
  return module;
}

}  // namespace agentcompile::analysis
