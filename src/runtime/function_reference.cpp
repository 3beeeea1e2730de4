// A function's outputs from the CPU reference interpreter (include/agentcompile/function.h).
#include "agentcompile/function.h"
#include "frontend/weight_formats.h"
#include "ir/interpreter.h"
#include "runtime/function_tensors.h"

namespace agentcompile {

Expected<std::pair<std::vector<TensorSpec>, std::vector<TensorSpec>>> function_signature(const std::filesystem::path& model,
                                                                                         const std::string& function) {
  AC_ASSIGN_OR_RETURN(frontend::ModelSource source, frontend::open_model(model, /*with_weights=*/false));
  AC_ASSIGN_OR_RETURN(ir::Module module, frontend::source_module(source));
  const ir::Function* f = module.find_function(function);
  if (!f) return error(ErrorCode::kNotFound, model.string() + " has no function @" + function);
  AC_ASSIGN_OR_RETURN(auto args, runtime::argument_specs(*f, source));
  AC_ASSIGN_OR_RETURN(auto results, runtime::result_specs(*f, source));
  return std::make_pair(std::move(args), std::move(results));
}

Expected<std::vector<Tensor>> run_function_reference(const std::filesystem::path& model, const std::string& function,
                                                     const std::vector<Tensor>& inputs, int threads) {
  AC_ASSIGN_OR_RETURN(frontend::ModelSource source, frontend::open_model(model, /*with_weights=*/true));
  AC_ASSIGN_OR_RETURN(ir::Module module, frontend::source_module(source));
  const ir::Function* f = module.find_function(function);
  if (!f) return error(ErrorCode::kNotFound, model.string() + " has no function @" + function);
  AC_ASSIGN_OR_RETURN(auto arg_specs, runtime::argument_specs(*f, source));
  AC_ASSIGN_OR_RETURN(auto out_specs, runtime::result_specs(*f, source));
  AC_TRY(runtime::check_inputs(inputs, arg_specs));
  std::vector<ir::HostTensor> args;
  for (const Tensor& input : inputs) {
    AC_ASSIGN_OR_RETURN(ir::HostTensor host, runtime::to_host_tensor(input));
    args.push_back(std::move(host));
  }
  const frontend::WeightStore* store = source.weights.get();
  ir::InterpreterOptions options;
  options.max_context = 1;
  options.threads = threads;
  const frontend::InterpreterLoaders loaders = frontend::interpreter_loaders(*store);
  ir::Interpreter interpreter(module, loaders.values, loaders.packed, options);
  AC_ASSIGN_OR_RETURN(std::vector<ir::HostTensor> results, interpreter.run(function, args));
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < results.size(); ++i) {
    AC_ASSIGN_OR_RETURN(Tensor out, runtime::from_host_tensor(results[i], out_specs[i]));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace agentcompile
