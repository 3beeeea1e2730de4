// The module a model compiles to (see model_module.h).
#include "emit/model_module.h"

#include "analysis/recognize/recognize.h"
#include "ir/decode_batch.h"
#include "ir/text.h"
#include "ir/verifier.h"

namespace agentcompile::emit {

namespace {

std::string print_without_locations(ir::Module module) {
  for (auto& function : module.functions)
    for (auto& node : function.nodes) node.loc.clear();
  return ir::print_module(module);
}

}  // namespace

Expected<ModelModule> model_module(const frontend::ModelSource& source, bool batch_decode) {
  ModelModule out;
  AC_ASSIGN_OR_RETURN(ir::Module module, frontend::source_module(source));
  AC_TRY(ir::verify_module(module));
  if (source.format != frontend::ModelFormat::kCaptured) {
    out.module = std::move(module);  // the builders write semantic ops already (their output is recognition's fixed point)
  } else {
    analysis::RecognizeReport report;
    AC_ASSIGN_OR_RETURN(out.module, analysis::recognize_module(std::move(module), &report));
    for (const auto& [pass, count] : report.fired) out.recognized.push_back(pass + ": " + std::to_string(count));
    out.raised = !report.fired.empty();
    for (const auto& note : report.notes) out.recognized.push_back(note);
  }
  // After recognition: the pass reads the semantic ops (rope, kv_append, attention) a capture is raised to.
  if (batch_decode) AC_TRY(ir::add_decode_batch(out.module));
  out.ir_text = print_without_locations(out.module);
  return out;
}

}  // namespace agentcompile::emit
