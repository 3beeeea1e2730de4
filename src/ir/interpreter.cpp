// The reference interpreter: checks a call's arguments, binds T and L, runs the function's nodes in
// order and frees every intermediate after its last use.
//
// Per function, a plan is made once: each node's declared type is checked against inference (so an
// unverified or hand-edited module is rejected instead of indexing out of bounds) and the values
// that die after each node are listed. Weights are loaded on first use and cached (an alias's rows
// are copied out of its source, which is loaded once under its own name); states are allocated
// [max_context, KV, D] on first use and live until the interpreter does.
#include "ir/interpreter.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <deque>
#include <new>
#include <stdexcept>

#include "ir/interpreter_exec.h"
#include "ir/interpreter_ops.h"
#include "ir/shard_ranges.h"
#include "ir/quant.h"
#include "ir/thread_pool.h"
#include "support/host_limits.h"

namespace agentcompile::ir {

int64_t HostTensor::elements() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

HostTensor HostTensor::from_i32(std::vector<int64_t> shape, std::vector<int32_t> values) {
  HostTensor tensor;
  tensor.dtype = DType::kI32;
  tensor.shape = std::move(shape);
  tensor.i32 = std::move(values);
  return tensor;
}

HostTensor HostTensor::scalar_i32(int32_t value) { return from_i32({}, {value}); }

HostTensor HostTensor::from_bool(std::vector<int64_t> shape, std::vector<int32_t> values) {
  HostTensor tensor = from_i32(std::move(shape), std::move(values));
  tensor.dtype = DType::kBool;
  return tensor;
}

namespace {

using exec::Tensor;

struct Plan {
  std::vector<std::vector<ValueId>> release_after;  // per node: values dead once it has run
};

std::string describe_node(const Function& function, size_t index) {
  const Node& node = function.nodes[index];
  std::string name = node.result >= 0 && node.result < static_cast<ValueId>(function.values.size())
                         ? function.value(node.result).name
                         : std::to_string(index);
  return function.name + ": node %" + name + " (" + std::string(op_name(node.op)) +
         (node.loc.empty() ? "" : ", " + node.loc) + ")";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Expected<Plan> make_plan(const Module& module, const Function& function) {
  const auto value_count = static_cast<ValueId>(function.values.size());
  for (const Value& value : function.values)  // quantized weights are held dequantized, as f32
    if (!is_float(value.type.dtype) && !exec::int_storage(value.type.dtype) && !is_quantized(value.type.dtype))
      return error(ErrorCode::kUnsupported, function.name + ": value %" + value.name + " is " + value.type.to_string() +
                                                "; the interpreter holds only float, quantized, i32 and bool values");
  std::vector<bool> defined(function.values.size(), false);
  std::vector<int64_t> last_use(function.values.size(), -1);
  for (ValueId arg : function.args) {
    if (arg < 0 || arg >= value_count)
      return error(ErrorCode::kInternal, function.name + ": an argument is not a value");
    defined[arg] = true;
  }
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    const Node& node = function.nodes[i];
    for (ValueId operand : node.operands) {
      if (operand < 0 || operand >= value_count || !defined[operand])
        return error(ErrorCode::kInternal, describe_node(function, i) + ": uses a value before it is defined");
      last_use[operand] = static_cast<int64_t>(i);
    }
    if (node.result < 0 || node.result >= value_count || defined[node.result])
      return error(ErrorCode::kInternal, describe_node(function, i) + ": result is not a fresh value");
    auto inferred = infer_result_type(module, function, node);
    if (!inferred) return inferred.status().with_context(describe_node(function, i));
    if (*inferred != function.type(node.result))
      return error(ErrorCode::kMismatch, describe_node(function, i) + ": declared type " +
                                             function.type(node.result).to_string() + " differs from inferred " +
                                             inferred->to_string());
    defined[node.result] = true;
  }
  std::vector<bool> pinned(function.values.size(), false);
  for (ValueId result : function.results) {
    if (result < 0 || result >= value_count || !defined[result])
      return error(ErrorCode::kInternal, function.name + ": returns an undefined value");
    pinned[result] = true;
  }
  Plan plan;
  plan.release_after.resize(function.nodes.size());
  for (ValueId id = 0; id < value_count; ++id) {
    if (pinned[id]) continue;
    if (last_use[id] >= 0)
      plan.release_after[last_use[id]].push_back(id);
    else if (function.value(id).producer >= 0)  // never used: drop it as soon as it exists
      plan.release_after[function.value(id).producer].push_back(id);
  }
  return plan;
}

// One node; a tensor too large to allocate (a huge static shape, a huge max_context) is an error,
// not a terminated process.
Expected<Tensor> execute(exec::Context& context, const Function& function, const Node& node,
                         const std::vector<Tensor>& values, const SymbolBindings& bindings) {
  try {
    return exec::execute_node(context, function, node, values, bindings);
  } catch (const std::bad_alloc&) {
    return error(ErrorCode::kResourceExhausted, "out of memory");
  } catch (const std::length_error&) {
    return error(ErrorCode::kResourceExhausted, "a tensor larger than memory can hold");
  }
}

}  // namespace

struct Interpreter::Impl {
  Module module;  // a copy: callers often pass a temporary from build_module
  WeightLoader loader;
  PackedWeightLoader packed_loader;
  InterpreterOptions options;
  ThreadPool pool;
  std::map<std::string, Tensor> weights;
  std::map<std::string, Tensor> states;
  std::map<std::string, Plan> plans;
  uint64_t held = 0;  // bytes of `weights` and `states`, for the host allocation guard

  struct RopeEntry {
    std::vector<float> inv_freq;
    float scale;
    int64_t pos, T;
    kernels::RopeTable table;
  };
  std::deque<RopeEntry> rope_cache;  // valid for one call; a deque keeps handed-out references valid

  Impl(const Module& m, WeightLoader l, PackedWeightLoader p, InterpreterOptions o)
      : module(m), loader(std::move(l)), packed_loader(std::move(p)), options(o), pool(o.threads) {}

  Expected<Tensor> weight(const std::string& name) {
    if (auto it = weights.find(name); it != weights.end()) return it->second;
    const ParamDecl* param = module.find_param(name);
    if (!param) return error(ErrorCode::kNotFound, "module has no parameter named '" + name + "'");
    if (!shape_is_static(param->type.shape))
      return error(ErrorCode::kInvalidArgument,
                   "parameter " + name + " has a symbolic shape " + param->type.to_string());
    if (!is_float(param->type.dtype) && !exec::int_storage(param->type.dtype) && !is_quantized(param->type.dtype))
      return error(ErrorCode::kUnsupported, "parameter " + name + " is " + param->type.to_string() +
                                                "; the interpreter holds only float, quantized, i32 and bool values");
    AC_ASSIGN_OR_RETURN(Tensor tensor, param->is_alias() ? alias_rows(*param) : load(*param));
    held += static_cast<uint64_t>(tensor.elements()) * 4;
    return weights.emplace(name, std::move(tensor)).first->second;
  }

  Expected<Tensor> load(const ParamDecl& param) {
    const std::string& name = param.name;
    if (is_quantized(param.type.dtype)) return load_packed(param);
    if (!loader) return error(ErrorCode::kNotFound, "no weight loader to load " + name);
    // The loader allocates the values: check first that the host can hold them.
    uint64_t bytes = UINT64_MAX;  // stays so if the product overflows
    support::checked_bytes(static_cast<uint64_t>(static_elements(param.type.shape)), 4, bytes);
    AC_TRY(support::check_host_allocation(bytes, "weight '" + name + "' " + param.type.to_string(), held));
    std::vector<float> data;
    Status status = loader(param.checkpoint_name(), data);
    if (!status.is_ok()) return status.with_context("loading weight " + name);
    if (param.is_shard()) {  // the loader gives the whole checkpoint tensor: keep the rank's ranges
      const int64_t whole = static_elements(param.source_shape());
      if (static_cast<int64_t>(data.size()) != whole)
        return error(ErrorCode::kMismatch, "loading weight " + name + ": the loader gave " + std::to_string(data.size()) +
                                               " values, the whole of sharded " + param.type.to_string() + " is " +
                                               std::to_string(whole));
      data = cut_shard(param, data);
    }
    const int64_t expected = static_elements(param.type.shape);
    if (static_cast<int64_t>(data.size()) != expected)
      return error(ErrorCode::kMismatch, "loading weight " + name + ": the loader gave " + std::to_string(data.size()) +
                                             " values, " + param.type.to_string() + " needs " +
                                             std::to_string(expected));
    Tensor tensor;
    tensor.dtype = param.type.dtype;
    tensor.shape = SymbolBindings{}.resolve(param.type.shape);
    if (!tensor.is_int()) {
      tensor.f32 = std::make_shared<std::vector<float>>(std::move(data));  // no copy of a large tensor
      return tensor;
    }
    // Integer parameters arrive as floats: each must be a whole number of the dtype (a cast of
    // anything else would be undefined).
    tensor.i32 = std::make_shared<std::vector<int32_t>>(data.size());
    const bool is_bool = tensor.dtype == DType::kBool;
    for (size_t i = 0; i < data.size(); ++i) {
      const float value = data[i];
      if (!(value >= -2147483648.0f && value < 2147483648.0f) || value != std::trunc(value) ||
          (is_bool && value != 0.0f && value != 1.0f))
        return error(ErrorCode::kInvalidArgument, "loading weight " + name + ": element " + std::to_string(i) + " (" +
                                                      std::to_string(value) + ") is not a " +
                                                      std::string(dtype_name(tensor.dtype)) + " value");
      (*tensor.i32)[i] = static_cast<int32_t>(value);
    }
    return tensor;
  }

  // A quantized parameter: its stored bytes, dequantized here as the format defines (held as f32).
  Expected<Tensor> load_packed(const ParamDecl& param) {
    const std::string at = "loading weight " + param.name + " " + param.type.to_string();
    if (!packed_loader) return error(ErrorCode::kNotFound, at + ": no loader of quantized weights was given");
    if (param.type.shape.size() != 2) return error(ErrorCode::kInvalidArgument, at + ": a quantized weight is a matrix [N, K]");
    const int64_t rows = param.type.shape[0].value, K = param.type.shape[1].value;
    if (std::string problem = row_length_problem(param.type.dtype, K); !problem.empty())
      return error(ErrorCode::kInvalidArgument, at + ": " + problem);
    uint64_t bytes = UINT64_MAX;
    support::checked_bytes(static_cast<uint64_t>(rows * K), 4, bytes);
    AC_TRY(support::check_host_allocation(bytes, "weight '" + param.name + "' " + param.type.to_string(), held));
    std::vector<uint8_t> stored;
    if (Status status = packed_loader(param.checkpoint_name(), param.type.dtype, stored); !status.is_ok()) return status.with_context(at);
    if (stored.size() != tensor_bytes(param.type))
      return error(ErrorCode::kMismatch, at + ": the loader gave " + std::to_string(stored.size()) + " bytes, the format needs " +
                                             std::to_string(tensor_bytes(param.type)));
    Tensor tensor;
    tensor.dtype = param.type.dtype;
    tensor.shape = {rows, K};
    tensor.f32 = std::make_shared<std::vector<float>>(static_cast<size_t>(rows * K));
    AC_TRY(dequantize_rows(param.type.dtype, stored.data(), rows, K, tensor.f32->data()).with_context(at));
    return tensor;
  }

  // Rows [alias_row, alias_row + rows) of the source's leading axis, copied out of the source
  // (which stays cached under its own name, as other aliases and nodes may read it).
  Expected<Tensor> alias_rows(const ParamDecl& param) {
    const std::string at = "parameter " + param.name + " (rows of " + param.alias_of + " from row " +
                           std::to_string(param.alias_row) + ")";
    const ParamDecl* source = module.find_param(param.alias_of);
    if (!source) return error(ErrorCode::kNotFound, at + ": module has no parameter named '" + param.alias_of + "'");
    if (source->is_alias()) return error(ErrorCode::kInvalidArgument, at + ": the source is itself an alias");
    // The module may be unverified: check that the rows lie inside the source before copying.
    const Shape& a = param.type.shape;
    const Shape& b = source->type.shape;
    bool fits = param.type.dtype == source->type.dtype && !a.empty() && a.size() == b.size() &&
                shape_is_static(b) && param.alias_row >= 0 && a[0].value <= b[0].value - param.alias_row;
    for (size_t d = 1; fits && d < a.size(); ++d) fits = a[d] == b[d];
    if (!fits)
      return error(ErrorCode::kInvalidArgument,
                   at + ": " + param.type.to_string() + " does not fit in " + source->type.to_string());
    AC_ASSIGN_OR_RETURN(Tensor whole, weight(param.alias_of));
    auto made = exec::make_tensor(param.type.dtype, SymbolBindings{}.resolve(a), held);
    if (!made) return made.status().with_context(at);
    Tensor rows = std::move(made).value();
    const int64_t row = rows.elements() / std::max<int64_t>(1, rows.shape[0]);  // elements per leading row
    const int64_t begin = param.alias_row * row;
    if (rows.is_int())
      std::copy_n(whole.i() + begin, rows.elements(), rows.i32->data());
    else
      std::copy_n(whole.f() + begin, rows.elements(), rows.f32->data());
    return rows;
  }

  Expected<Tensor> state(const std::string& name) {
    if (auto it = states.find(name); it != states.end()) return it->second;
    const StateDecl* decl = module.find_state(name);
    if (!decl) return error(ErrorCode::kNotFound, "module has no state named '" + name + "'");
    if (options.max_context < 1)
      return error(ErrorCode::kInvalidArgument,
                   "state " + name + ": max_context must be at least 1, got " + std::to_string(options.max_context));
    if (!is_float(decl->type.dtype))
      return error(ErrorCode::kUnsupported,
                   "state " + name + " is " + decl->type.to_string() + "; states must be float");
    for (const Dim& dim : decl->type.shape)
      if (dim.symbol == Symbol::kT)
        return error(ErrorCode::kInvalidArgument, "state " + name + " " + decl->type.to_string() + " depends on T");
    if (states.empty()) AC_TRY(check_states_fit());
    SymbolBindings bindings;
    bindings.L = options.max_context;
    auto made = exec::make_tensor(decl->type.dtype, bindings.resolve(decl->type.shape), held);
    if (!made) return made.status().with_context("state '" + name + "' (max_context " + std::to_string(options.max_context) + ")");
    held += static_cast<uint64_t>(made->elements()) * 4;
    return states.emplace(name, std::move(made).value()).first->second;
  }

  // Every state lives as long as the interpreter: before the first is allocated, all of them together
  // must fit, so a context the host cannot hold fails at once, naming its size.
  Status check_states_fit() const {
    SymbolBindings bindings;
    bindings.L = options.max_context;
    uint64_t total = 0;
    bool alike = true;
    for (const StateDecl& decl : module.states) {
      uint64_t bytes = 0;
      if (!support::checked_bytes(bindings.resolve(decl.type.shape), 4, bytes) || __builtin_add_overflow(total, bytes, &total))
        total = UINT64_MAX;
      alike = alike && decl.type.shape == module.states.front().type.shape;
    }
    if (module.states.empty()) return Status::ok();
    const std::string what = std::to_string(module.states.size()) + " states (KV caches) " +
                             (alike ? "of f32" + shape_text(bindings.resolve(module.states.front().type.shape))
                                    : "at max_context " + std::to_string(options.max_context));
    return support::check_host_allocation(total, what, held);
  }

  const kernels::RopeTable& rope_table(const std::vector<float>& inv_freq, float scale, int64_t pos, int64_t T) {
    for (const RopeEntry& e : rope_cache)
      if (e.pos == pos && e.T == T && e.scale == scale && e.inv_freq == inv_freq) return e.table;
    rope_cache.push_back(RopeEntry{inv_freq, scale, pos, T, kernels::rope_table(inv_freq, pos, T, scale)});
    return rope_cache.back().table;
  }

  Expected<const Plan*> plan_for(const Function& function) {
    if (auto it = plans.find(function.name); it != plans.end()) return &it->second;
    AC_ASSIGN_OR_RETURN(Plan plan, make_plan(module, function));
    return &plans.emplace(function.name, std::move(plan)).first->second;
  }

  // Checks args against the function's argument types and finds T.
  Expected<SymbolBindings> bind(const Function& function, const std::vector<HostTensor>& args) {
    if (args.size() != function.args.size()) {
      std::string names;
      for (ValueId id : function.args) names += (names.empty() ? "" : ", ") + function.value(id).name;
      return error(ErrorCode::kInvalidArgument, function.name + ": expects " + std::to_string(function.args.size()) +
                                                    " arguments (" + names + "), got " + std::to_string(args.size()));
    }
    SymbolBindings bindings;
    bindings.L = options.max_context;
    int64_t tokens = -1;
    std::string tokens_from;
    for (size_t i = 0; i < args.size(); ++i) {
      const Value& decl = function.value(function.args[i]);
      const HostTensor& arg = args[i];
      const std::string where = function.name + ": argument '" + decl.name + "' (" + decl.type.to_string() + ")";
      const bool want_int = exec::int_storage(decl.type.dtype);
      // Float dtypes are interchangeable here: the interpreter holds all of them as f32.
      if (want_int ? arg.dtype != decl.type.dtype : !is_float(arg.dtype))
        return error(ErrorCode::kInvalidArgument, where + ": got a " + std::string(dtype_name(arg.dtype)) + " tensor");
      if (arg.shape.size() != decl.type.shape.size())
        return error(ErrorCode::kInvalidArgument, where + ": got shape " + shape_text(arg.shape));
      for (size_t d = 0; d < arg.shape.size(); ++d) {
        const Dim& dim = decl.type.shape[d];
        const int64_t size = arg.shape[d];
        bool ok = size >= 0;
        if (dim.symbol == Symbol::kNone) ok = ok && size == dim.value;
        if (dim.symbol == Symbol::kL) ok = ok && size == options.max_context;
        if (dim.symbol == Symbol::kT) {
          if (tokens >= 0 && size != tokens)
            return error(ErrorCode::kInvalidArgument, where + ": T is " + std::to_string(size) + " here but " +
                                                          std::to_string(tokens) + " in argument '" + tokens_from +
                                                          "'");
          tokens = size;
          tokens_from = decl.name;
        }
        if (!ok) return error(ErrorCode::kInvalidArgument, where + ": got shape " + shape_text(arg.shape));
      }
      const size_t held = want_int ? arg.i32.size() : arg.f32.size();
      if (static_cast<int64_t>(held) != arg.elements())
        return error(ErrorCode::kInvalidArgument,
                     where + ": holds " + std::to_string(held) + " values for shape " + shape_text(arg.shape));
      if (decl.type.dtype == DType::kBool)
        for (size_t e = 0; e < arg.i32.size(); ++e)
          if (arg.i32[e] != 0 && arg.i32[e] != 1)
            return error(ErrorCode::kInvalidArgument, where + ": element " + std::to_string(e) + " is " +
                                                          std::to_string(arg.i32[e]) + "; bool values are 0 or 1");
    }
    if (tokens == 0) return error(ErrorCode::kInvalidArgument, function.name + ": T must be at least 1");
    if (tokens > 0) bindings.T = tokens;
    return bindings;
  }

  Expected<std::vector<HostTensor>> run(const std::string& name, const std::vector<HostTensor>& args) {
    const Function* function = module.find_function(name);
    if (!function) {
      std::string names;
      for (const Function& f : module.functions) names += (names.empty() ? "" : ", ") + f.name;
      return error(ErrorCode::kNotFound,
                   "module '" + module.name + "' has no function '" + name + "' (it has: " + names + ")");
    }
    if (options.max_context < 1)
      return error(ErrorCode::kInvalidArgument,
                   "max_context must be at least 1, got " + std::to_string(options.max_context));
    AC_ASSIGN_OR_RETURN(const Plan* plan, plan_for(*function));
    AC_ASSIGN_OR_RETURN(SymbolBindings bindings, bind(*function, args));

    std::vector<Tensor> values(function->values.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const TensorType& type = function->type(function->args[i]);
      AC_ASSIGN_OR_RETURN(Tensor tensor, exec::make_tensor(type.dtype, args[i].shape, held));
      if (tensor.is_int())
        *tensor.i32 = args[i].i32;
      else
        *tensor.f32 = args[i].f32;
      values[function->args[i]] = std::move(tensor);
    }
    rope_cache.clear();
    exec::Context context;
    context.pool = &pool;
    context.weight = [this](const std::string& n) { return weight(n); };
    context.state = [this](const std::string& n) { return state(n); };
    context.collective = options.collective;
    context.rope_table = [this](const std::vector<float>& inv_freq, float scale, int64_t pos,
                                int64_t T) -> const kernels::RopeTable& { return rope_table(inv_freq, scale, pos, T); };
    for (size_t i = 0; i < function->nodes.size(); ++i) {
      const Node& node = function->nodes[i];
      context.held_bytes = held;
      auto result = execute(context, *function, node, values, bindings);
      if (!result) return result.status().with_context(describe_node(*function, i));
      values[node.result] = std::move(result).value();
      for (ValueId dead : plan->release_after[i]) values[dead] = Tensor{};
    }
    rope_cache.clear();

    std::vector<HostTensor> results;
    for (ValueId id : function->results) {
      Tensor& tensor = values[id];
      HostTensor host;
      host.dtype = function->type(id).dtype;
      host.shape = tensor.shape;
      // A result the run alone holds, returned once, is moved out; one that shares its storage (with a
      // state, a weight, a view or another result) is copied. A copy of a 2^30-element output is 4 GiB.
      const bool sole = std::count(function->results.begin(), function->results.end(), id) == 1 &&
                        (tensor.is_int() ? tensor.i32.use_count() : tensor.f32.use_count()) == 1;
      if (tensor.is_int())
        host.i32 = sole ? std::move(*tensor.i32) : *tensor.i32;
      else
        host.f32 = sole ? std::move(*tensor.f32) : *tensor.f32;
      results.push_back(std::move(host));
    }
    return results;
  }
};

Interpreter::Interpreter(const Module& module, WeightLoader loader, InterpreterOptions options)
    : impl_(new Impl(module, std::move(loader), {}, options)) {}

Interpreter::Interpreter(const Module& module, WeightLoader loader, PackedWeightLoader packed, InterpreterOptions options)
    : impl_(new Impl(module, std::move(loader), std::move(packed), options)) {}

Interpreter::~Interpreter() { delete impl_; }

Expected<std::vector<HostTensor>> Interpreter::run(const std::string& function, const std::vector<HostTensor>& args) {
  return impl_->run(function, args);
}

// Does not reset(): prefill writes cache rows from 0 and attention reads only rows below pos+T,
// all written by this sequence, so rows left by an earlier sequence are never read.
Expected<Interpreter::Generation> Interpreter::generate_greedy(const std::vector<int32_t>& prompt, int new_tokens) {
  if (prompt.empty()) return error(ErrorCode::kInvalidArgument, "generate_greedy: the prompt is empty");
  if (new_tokens < 1)
    return error(ErrorCode::kInvalidArgument,
                 "generate_greedy: new_tokens must be at least 1, got " + std::to_string(new_tokens));
  if (static_cast<int64_t>(prompt.size()) + new_tokens > INT32_MAX)
    return error(ErrorCode::kInvalidArgument, "generate_greedy: positions would overflow i32");
  Generation generation;
  auto step = [&](const std::string& function, const std::vector<int32_t>& tokens, int64_t pos) -> Status {
    auto outputs = run(function, {HostTensor::from_i32({static_cast<int64_t>(tokens.size())}, tokens),
                                  HostTensor::scalar_i32(static_cast<int32_t>(pos))});
    if (!outputs) return outputs.status().with_context("generate_greedy");
    if (outputs->empty() || exec::int_storage((*outputs)[0].dtype) || (*outputs)[0].shape.size() != 2 ||
        (*outputs)[0].shape[0] < 1 || (*outputs)[0].shape[1] < 1)
      return error(ErrorCode::kMismatch, "generate_greedy: " + function + " must return float logits [rows, V] first");
    const HostTensor& logits = (*outputs)[0];  // [T or 1, V]
    const int64_t vocab = logits.shape[1];
    std::vector<float> last(logits.f32.end() - vocab, logits.f32.end());  // [V]
    int32_t token = 0;
    kernels::argmax(last.data(), &token, 1, vocab, 1);
    generation.logits.push_back(std::move(last));
    generation.tokens.push_back(token);
    return Status::ok();
  };
  AC_TRY(step("prefill", prompt, 0));
  for (int i = 1; i < new_tokens; ++i)
    AC_TRY(step("decode", {generation.tokens.back()}, static_cast<int64_t>(prompt.size()) + i - 1));
  return generation;
}

Expected<std::vector<float>> Interpreter::state(const std::string& name) const {
  AC_ASSIGN_OR_RETURN(Tensor tensor, impl_->state(name));
  return *tensor.f32;
}

Status Interpreter::set_state(const std::string& name, const std::vector<float>& values) {
  AC_ASSIGN_OR_RETURN(Tensor tensor, impl_->state(name));
  if (values.size() != tensor.f32->size())
    return error(ErrorCode::kInvalidArgument, "set_state " + name + ": got " + std::to_string(values.size()) +
                                                  " values, the state holds " + std::to_string(tensor.f32->size()) +
                                                  " " + shape_text(tensor.shape));
  std::copy(values.begin(), values.end(), tensor.f32->begin());
  return Status::ok();
}

Status Interpreter::swap_state(const std::string& name, std::vector<float>& values) {
  AC_ASSIGN_OR_RETURN(Tensor tensor, impl_->state(name));
  if (values.size() != tensor.f32->size())
    return error(ErrorCode::kInvalidArgument, "swap_state " + name + ": got " + std::to_string(values.size()) +
                                                  " values, the state holds " + std::to_string(tensor.f32->size()) +
                                                  " " + shape_text(tensor.shape));
  tensor.f32->swap(values);  // the state's storage object stays; only its buffer changes hands
  return Status::ok();
}

void Interpreter::reset() {
  for (auto& [name, tensor] : impl_->states) std::fill(tensor.f32->begin(), tensor.f32->end(), 0.0f);
}

}  // namespace agentcompile::ir
