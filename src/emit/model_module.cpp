// The module a model compiles to (see model_module.h).
#include "emit/model_module.h"

#include "analysis/recognize/recognize.h"
#include "ir/decode_batch.h"
#include "ir/text.h"
#include "ir/verifier.h"
#include "shard/shard.h"

namespace agentcompile::emit {

namespace {

std::string print_without_locations(ir::Module module) {
  for (auto& function : module.functions)
    for (auto& node : function.nodes) node.loc.clear();
  return ir::print_module(module);
}

Expected<ModelModule> whole_module(const frontend::ModelSource& source) {
  ModelModule out;
  AC_ASSIGN_OR_RETURN(ir::Module module, frontend::source_module(source));
  AC_TRY(ir::verify_module(module));
  if (source.format != frontend::ModelFormat::kCaptured) {
    out.module = std::move(module);  // the builders write semantic ops already (their output is recognition's fixed point)
    return out;
  }
  analysis::RecognizeReport report;
  AC_ASSIGN_OR_RETURN(out.module, analysis::recognize_module(std::move(module), &report));
  for (const auto& [pass, count] : report.fired) out.recognized.push_back(pass + ": " + std::to_string(count));
  out.raised = !report.fired.empty();
  for (const auto& note : report.notes) out.recognized.push_back(note);
  return out;
}

}  // namespace

Expected<ModelModule> model_module(const frontend::ModelSource& source, bool batch_decode, const ModuleShard& shard) {
  if (batch_decode && shard.ranks > 1)
    return error(ErrorCode::kUnsupported, "--batch-decode with --tensor-parallel " + std::to_string(shard.ranks) +
                                              ": batched decode of a sharded model is not implemented yet");
  AC_ASSIGN_OR_RETURN(ModelModule out, whole_module(source));
  // Both passes run after recognition: they read the semantic ops (rope, kv_append, attention, the
  // projections' roles, shard/roles.h) a capture is raised to.
  if (shard.ranks >= 1) {
    AC_ASSIGN_OR_RETURN(out.module, shard::shard_module(out.module, {shard.ranks, shard.rank}));
  }
  if (batch_decode) AC_TRY(ir::add_decode_batch(out.module));
  out.ir_text = print_without_locations(out.module);
  return out;
}

}  // namespace agentcompile::emit
