// Parameters computed at load by @init (see derived_weights.h).
#include "runtime/derived_weights.h"

#include "ir/interpreter.h"

namespace agentcompile::runtime {

Expected<std::unique_ptr<frontend::MemoryStore>> compute_derived_weights(const ir::Module& module, const frontend::WeightStore& store) {
  const ir::Function* init = module.find_function(kInitFunction);
  if (!init) return std::unique_ptr<frontend::MemoryStore>();
  if (!init->args.empty()) return error(ErrorCode::kInvalidArgument, "@init takes arguments; it must compute from weights alone");
  ir::Interpreter interpreter(module, [&store](const std::string& name, std::vector<float>& out) { return store.read_f32(name, out); });
  AC_ASSIGN_OR_RETURN(std::vector<ir::HostTensor> results, interpreter.run(kInitFunction, {}));
  std::vector<const ir::ParamDecl*> targets;
  for (const ir::ParamDecl& param : module.params)
    if (param.name.rfind("init.", 0) == 0) targets.push_back(&param);
  if (targets.size() != results.size())
    return error(ErrorCode::kMismatch, "@init returns " + std::to_string(results.size()) + " results for " + std::to_string(targets.size()) +
                                           " parameters named init.*");
  auto derived = std::make_unique<frontend::MemoryStore>("@init (computed at load)");
  for (size_t i = 0; i < results.size(); ++i) {
    const ir::ParamDecl& param = *targets[i];
    const std::string& name = param.name;
    if (!ir::is_float(param.type.dtype))
      return error(ErrorCode::kUnsupported, "@init computes parameter @" + name + " as " + param.type.to_string() + "; only float parameters are derived");
    if (results[i].f32.size() != static_cast<size_t>(ir::static_elements(param.type.shape)))
      return error(ErrorCode::kMismatch, "@init result " + std::to_string(i) + " has another element count than parameter @" + name + " " +
                                             param.type.to_string());
    derived->put(name, param.type.dtype, results[i].shape, std::move(results[i].f32));
  }
  return derived;
}

}  // namespace agentcompile::runtime
