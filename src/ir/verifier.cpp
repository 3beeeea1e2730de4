// The verifier: checks the invariants ir/graph.h promises, so passes and the parser can trust them.
//
// Module level: function, parameter and state names are unique; parameters have static types; states
// are [L, KV, D]. Function level, in one walk over the nodes in order: values are well typed
// (known symbols, non-negative sizes, plain dtypes), each defined exactly once (as an argument or as
// one node's result, with Value::producer saying which) and only used after its definition; every
// node's declared type equals infer_result_type's; known attributes have the right kind; each state is
// appended at most once; attention reads k and v straight from kv_append results; results exist.
// Quantized weight formats (ir/quant.h) are types of parameters and of the weight nodes that read
// them, and nothing else: such a value is only read as a linear's weight or an embedding's table,
// and a parameter's rows must be a length its format can store.
// Every error names the function, the value (%name) and what is wrong.
#include "ir/verifier.h"

#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/quant.h"

namespace agentcompile::ir {

namespace {

Status invalid(const std::string& message) { return error(ErrorCode::kInvalidArgument, message); }

// A type a value may carry: a plain dtype (or, where `allow_quantized`, a weight format), dims that
// are T, L or a non-negative size.
std::string type_problem(const TensorType& type, bool allow_symbols, bool allow_quantized = false) {
  if (static_cast<size_t>(type.dtype) > static_cast<size_t>(DType::kI4G32M_F16)) return "has an unknown dtype";  // the last
  if (is_quantized(type.dtype) && !allow_quantized)
    return "has dtype " + std::string(dtype_name(type.dtype)) + ", a weight format: only parameters and their weight nodes carry one";
  for (const Dim& dim : type.shape) {
    if (dim.symbol != Symbol::kNone && dim.symbol != Symbol::kT && dim.symbol != Symbol::kL)
      return "has a dimension with an unknown symbol";
    if (dim.symbol != Symbol::kNone && !allow_symbols) return "has symbolic dims but must be static";
    if (dim.is_static() && dim.value < 0) return "has a negative dimension " + std::to_string(dim.value);
  }
  return "";
}

std::string attr_kind_name(const AttrValue& value) {
  switch (value.index()) {
    case 0: return "an integer";
    case 1: return "a float";
    case 2: return "a string";
    case 3: return "a dim list";
    default: return "a float list";
  }
}

enum class AttrKind { kInt, kFloat, kString, kDims, kFloats };

// The kinds the op semantics (ir/ops.h) give each attribute. Attributes not listed are left alone so
// passes may annotate nodes; listed ones must have their kind (an integer is accepted as a float).
std::vector<std::pair<std::string, AttrKind>> attr_schema(OpKind op) {
  using K = AttrKind;
  switch (op) {
    case OpKind::kWeight: return {{"name", K::kString}};
    case OpKind::kEmbedding: return {{"dtype", K::kString}};
    case OpKind::kCast: return {{"dtype", K::kString}};
    case OpKind::kRmsNorm: return {{"eps", K::kFloat}};
    case OpKind::kRope:
      return {{"theta", K::kFloat},           {"scaling", K::kString},         {"factor", K::kFloat},
              {"low_freq_factor", K::kFloat}, {"high_freq_factor", K::kFloat}, {"original_max_position", K::kInt},
              {"inv_freq", K::kFloats},       {"scale", K::kFloat}};
    case OpKind::kLayerNorm: return {{"eps", K::kFloat}};
    case OpKind::kConstant: return {{"dtype", K::kString}, {"shape", K::kDims}, {"value", K::kFloat}, {"values", K::kFloats}};
    case OpKind::kArange: return {{"dtype", K::kString}, {"start", K::kFloat}, {"step", K::kFloat}, {"length", K::kDims}};
    case OpKind::kRandomUniform: return {{"shape", K::kDims}, {"seed", K::kInt}};
    case OpKind::kIndexSelect:
    case OpKind::kGather:
    case OpKind::kConcat:
    case OpKind::kFlip:
    case OpKind::kLogSoftmax:
    case OpKind::kCumsum:
    case OpKind::kCumprod: return {{"axis", K::kInt}};
    case OpKind::kIndexCopy: return {{"state", K::kString}, {"axis", K::kInt}};
    case OpKind::kGelu: return {{"approximate", K::kString}};
    case OpKind::kLeakyRelu: return {{"slope", K::kFloat}};
    case OpKind::kClamp: return {{"lo", K::kFloat}, {"hi", K::kFloat}};
    case OpKind::kAllReduce: return {{"ranks", K::kInt}};
    case OpKind::kAllGather: return {{"axis", K::kInt}, {"ranks", K::kInt}};
    case OpKind::kSdpa: return {{"scale", K::kFloat}, {"causal", K::kInt}, {"gqa", K::kInt}};
    case OpKind::kReshape:
    case OpKind::kView:
    case OpKind::kBroadcast: return {{"shape", K::kDims}};
    case OpKind::kTranspose: return {{"perm", K::kDims}};
    case OpKind::kSlice: return {{"axis", K::kInt}, {"start", K::kInt}, {"length", K::kInt}};
    case OpKind::kKvAppend: return {{"state", K::kString}};
    case OpKind::kAttention: return {{"scale", K::kFloat}, {"window", K::kInt}};
    case OpKind::kSoftmax: return {{"axis", K::kInt}};
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceMean:
    case OpKind::kReduceProd:
    case OpKind::kArgmax:
    case OpKind::kArgmin: return {{"axis", K::kInt}, {"keepdim", K::kInt}};
    default: return {};
  }
}

bool attr_has_kind(const AttrValue& value, AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return std::holds_alternative<int64_t>(value);
    case AttrKind::kFloat: return std::holds_alternative<double>(value) || std::holds_alternative<int64_t>(value);
    case AttrKind::kString: return std::holds_alternative<std::string>(value);
    case AttrKind::kDims: return std::holds_alternative<std::vector<Dim>>(value);
    case AttrKind::kFloats: return std::holds_alternative<FloatList>(value) && !std::get<FloatList>(value).empty();
  }
  return false;
}

const char* kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return "an integer";
    case AttrKind::kFloat: return "a float";
    case AttrKind::kString: return "a string";
    case AttrKind::kDims: return "a dim list";
    case AttrKind::kFloats: return "a non-empty float list";
  }
  return "?";
}

class FunctionVerifier {
 public:
  FunctionVerifier(const Module& module, const Function& function) : module_(module), f_(function) {}

  Status run() {
    AC_TRY(check_values());
    defined_.assign(f_.values.size(), false);
    for (ValueId arg : f_.args) defined_[static_cast<size_t>(arg)] = true;
    for (size_t index = 0; index < f_.nodes.size(); ++index) AC_TRY(check_node(index));
    return check_results();
  }

 private:
  std::string where() const { return "function @" + f_.name; }
  std::string ref(ValueId id) const {
    if (id < 0 || static_cast<size_t>(id) >= f_.values.size()) return "value #" + std::to_string(id);
    return "%" + f_.values[static_cast<size_t>(id)].name;
  }
  bool in_range(ValueId id) const { return id >= 0 && static_cast<size_t>(id) < f_.values.size(); }
  std::string node_ref(size_t index) const {
    const Node& node = f_.nodes[index];
    return (in_range(node.result) ? ref(node.result) : "node " + std::to_string(index)) + " = " +
           std::string(op_name(node.op));
  }

  // Names, types and the one-definition rule, before any node is looked at.
  Status check_values() {
    std::vector<int> definitions(f_.values.size(), 0);
    for (ValueId arg : f_.args) {
      if (!in_range(arg)) return invalid(where() + ": argument " + ref(arg) + " is not a value of the function");
      ++definitions[static_cast<size_t>(arg)];
      if (f_.value(arg).producer != -1)
        return invalid(where() + ": argument " + ref(arg) + " claims node " + std::to_string(f_.value(arg).producer) +
                       " as its producer");
    }
    for (size_t index = 0; index < f_.nodes.size(); ++index) {
      const Node& node = f_.nodes[index];
      if (static_cast<int>(node.op) >= op_count())
        return invalid(where() + ": node " + std::to_string(index) + " has an unknown op kind " +
                       std::to_string(static_cast<int>(node.op)));
      if (!in_range(node.result))
        return invalid(where() + ": node " + std::to_string(index) + " (" + std::string(op_name(node.op)) +
                       ") has no result value");
      ++definitions[static_cast<size_t>(node.result)];
      if (f_.value(node.result).producer != static_cast<int32_t>(index))
        return invalid(where() + ": " + ref(node.result) + " is the result of node " + std::to_string(index) +
                       " but its producer is " + std::to_string(f_.value(node.result).producer));
    }
    std::unordered_map<std::string, ValueId> names;
    for (size_t i = 0; i < f_.values.size(); ++i) {
      const Value& value = f_.values[i];
      const auto id = static_cast<ValueId>(i);
      if (value.name.empty()) return invalid(where() + ": value #" + std::to_string(i) + " has no name");
      if (!names.emplace(value.name, id).second) return invalid(where() + ": two values are named %" + value.name);
      if (definitions[i] == 0)
        return invalid(where() + ": " + ref(id) + " is never defined (no argument or node result; producer " +
                       std::to_string(value.producer) + ")");
      if (definitions[i] > 1)
        return invalid(where() + ": " + ref(id) + " is defined " + std::to_string(definitions[i]) + " times");
      const bool weight = value.producer >= 0 && static_cast<size_t>(value.producer) < f_.nodes.size() &&
                          f_.nodes[static_cast<size_t>(value.producer)].op == OpKind::kWeight;
      if (std::string problem = type_problem(value.type, true, weight); !problem.empty())
        return invalid(where() + ": " + ref(id) + " : " + value.type.to_string() + " " + problem);
    }
    return Status::ok();
  }

  Status check_node(size_t index) {
    const Node& node = f_.nodes[index];
    const std::string at = where() + ": " + node_ref(index);
    for (size_t i = 0; i < node.operands.size(); ++i) {
      const ValueId operand = node.operands[i];
      if (!in_range(operand))
        return invalid(at + ": operand " + std::to_string(i) + " (" + ref(operand) + ") is not a value of the function");
      if (!defined_[static_cast<size_t>(operand)])
        return invalid(at + ": operand " + std::to_string(i) + " (" + ref(operand) + ") is used before it is defined");
      const bool reads_format = (node.op == OpKind::kLinear && i == 1) || (node.op == OpKind::kEmbedding && i == 0);
      if (is_quantized(f_.type(operand).dtype) && !reads_format)
        return invalid(at + ": operand " + std::to_string(i) + " (" + ref(operand) + " : " + f_.type(operand).to_string() +
                       ") is a quantized weight, which only a linear's weight or an embedding's table may be");
    }
    for (const auto& [key, kind] : attr_schema(node.op)) {
      auto it = node.attrs.find(key);
      if (it != node.attrs.end() && !attr_has_kind(it->second, kind))
        return invalid(at + ": attr " + key + " must be " + kind_name(kind) + ", got " + attr_kind_name(it->second) +
                       " " + attr_to_string(it->second));
    }
    auto inferred = infer_result_type(module_, f_, node);
    if (!inferred) return inferred.status().with_context(at);
    const TensorType& declared = f_.type(node.result);
    if (*inferred != declared)
      return invalid(at + ": declared type " + declared.to_string() + " differs from inferred type " +
                     inferred->to_string());

    if (node.op == OpKind::kKvAppend || node.op == OpKind::kIndexCopy) {
      const std::string state = node.string_attr("state");
      if (!appended_.insert(state).second)
        return invalid(at + ": state @" + state + " is written a second time in the function");
    }
    if (node.op == OpKind::kAttention) {
      for (size_t i : {size_t{1}, size_t{2}}) {
        const Value& cache = f_.value(node.operands[i]);
        if (cache.producer < 0 || f_.nodes[static_cast<size_t>(cache.producer)].op != OpKind::kKvAppend)
          return invalid(at + ": " + (i == 1 ? "k" : "v") + " operand " + ref(node.operands[i]) +
                         " must be the result of a kv_append (the cache), but is " +
                         (cache.producer < 0 ? std::string("an argument")
                                             : "a " + std::string(op_name(f_.nodes[static_cast<size_t>(cache.producer)].op))));
        AC_TRY(check_same_rows(node, f_.nodes[static_cast<size_t>(cache.producer)], at));
      }
    }
    defined_[static_cast<size_t>(node.result)] = true;
    return Status::ok();
  }

  // Attention reads the rows its kv_appends wrote: both take the per-row form (ir/ops.h) or neither, and
  // per row they name the same sequence (the same pos and base values), or a row would attend over
  // another sequence's cache.
  Status check_same_rows(const Node& attention, const Node& append, const std::string& at) {
    const bool rows = attention.operands.size() == 5;
    if (rows != (append.operands.size() == 3))
      return invalid(at + ": attention " + (rows ? "takes" : "does not take") + " per-row positions but the kv_append of @" +
                     append.string_attr("state") + " " + (rows ? "does not" : "does"));
    if (rows && (attention.operands[3] != append.operands[1] || attention.operands[4] != append.operands[2]))
      return invalid(at + ": attention's per-row pos and base (" + ref(attention.operands[3]) + ", " + ref(attention.operands[4]) +
                     ") differ from those the kv_append of @" + append.string_attr("state") + " wrote with (" +
                     ref(append.operands[1]) + ", " + ref(append.operands[2]) + ")");
    return Status::ok();
  }

  Status check_results() {
    if (f_.results.empty()) return invalid(where() + ": returns no results");
    for (size_t i = 0; i < f_.results.size(); ++i) {
      if (!in_range(f_.results[i]))
        return invalid(where() + ": result " + std::to_string(i) + " (" + ref(f_.results[i]) +
                       ") is not a value of the function");
      if (is_quantized(f_.type(f_.results[i]).dtype))
        return invalid(where() + ": result " + std::to_string(i) + " (" + ref(f_.results[i]) + ") is a quantized weight");
    }
    return Status::ok();
  }

  const Module& module_;
  const Function& f_;
  std::vector<bool> defined_;
  std::set<std::string> appended_;
};

// A shard's ranges lie in its axis and add up to the parameter's size along it; an alias is never a
// shard itself (its source is), and a quantized weight is not sharded.
std::string shard_problem(const ParamDecl& param) {
  if (!param.is_shard()) return "";
  const Shape& shape = param.type.shape;
  if (param.is_alias()) return "is an alias and a shard: only an alias's source may be sharded";
  if (is_quantized(param.type.dtype)) return "is a quantized weight, which is not sharded";
  if (param.shard_axis < 0 || static_cast<size_t>(param.shard_axis) >= shape.size())
    return "is sharded along axis " + std::to_string(param.shard_axis) + ", outside its rank";
  int64_t total = 0;
  for (const ParamDecl::Range& range : param.shard_ranges) {
    if (range.start < 0 || range.length < 1 || range.start > param.shard_of - range.length)
      return "has the shard range [" + std::to_string(range.start) + ", " + std::to_string(range.length) +
             "] outside 0.." + std::to_string(param.shard_of) + " of axis " + std::to_string(param.shard_axis);
    total += range.length;
  }
  if (total != shape[static_cast<size_t>(param.shard_axis)].value)
    return "has shard ranges of " + std::to_string(total) + " entries along axis " + std::to_string(param.shard_axis) +
           " where its type has " + shape[static_cast<size_t>(param.shard_axis)].to_string();
  return "";
}

}  // namespace

Status verify_function(const Module& module, const Function& function) {
  return FunctionVerifier(module, function).run();
}

Status verify_module(const Module& module) {
  const std::string where = "module " + module.name;
  std::set<std::string> names;
  for (const ParamDecl& param : module.params) {
    if (param.name.empty()) return invalid(where + ": a parameter has no name");
    if (!names.insert(param.name).second) return invalid(where + ": two parameters are named @" + param.name);
    std::string problem = type_problem(param.type, false, true);
    if (problem.empty() && is_quantized(param.type.dtype)) {
      if (param.type.shape.size() != 2) problem = "is a weight format, which stores matrices [N, K] only";
      else if (std::string rows = row_length_problem(param.type.dtype, param.type.shape[1].value); !rows.empty()) problem = rows;
    }
    if (!problem.empty()) return invalid(where + ": parameter @" + param.name + " : " + param.type.to_string() + " " + problem);
  }
  for (const ParamDecl& param : module.params)
    if (std::string problem = shard_problem(param); !problem.empty())
      return invalid(where + ": parameter @" + param.name + " : " + param.type.to_string() + " " + problem);
  // A copy holds another parameter's values in a type of its own: the same shape, a whole tensor.
  for (const ParamDecl& param : module.params) {
    if (!param.is_copy()) continue;
    const std::string at = where + ": parameter @" + param.name + " (the values of @" + param.values_of + ")";
    const ParamDecl* source = module.find_param(param.values_of);
    if (!source) return invalid(at + ": no parameter @" + param.values_of);
    if (source->is_copy() || source->is_alias() || source->is_shard())
      return invalid(at + ": @" + param.values_of + " is itself a copy, an alias or a shard");
    if (param.is_alias() || param.is_shard()) return invalid(at + ": a copy is a whole tensor of its own, not an alias or a shard");
    if (param.type.shape != source->type.shape)
      return invalid(at + ": " + param.type.to_string() + " has another shape than " + source->type.to_string());
  }
  for (const ParamDecl& param : module.params) {
    if (!param.is_alias()) continue;
    const std::string at = where + ": parameter @" + param.name + " (an alias of @" + param.alias_of + ")";
    const ParamDecl* source = module.find_param(param.alias_of);
    if (!source) return invalid(at + ": no parameter @" + param.alias_of);
    if (source->is_alias()) return invalid(at + ": @" + param.alias_of + " is itself an alias");
    const Shape& a = param.type.shape;
    const Shape& b = source->type.shape;
    bool fits = param.type.dtype == source->type.dtype && !a.empty() && a.size() == b.size() && param.alias_row >= 0;
    for (size_t d = 1; fits && d < a.size(); ++d) fits = a[d] == b[d];
    if (fits) fits = a[0].value <= b[0].value - param.alias_row;
    if (!fits)
      return invalid(at + ": " + param.type.to_string() + " from row " + std::to_string(param.alias_row) + " does not fit in " +
                     source->type.to_string());
  }
  names.clear();
  for (const StateDecl& state : module.states) {
    if (state.name.empty()) return invalid(where + ": a state has no name");
    if (!names.insert(state.name).second) return invalid(where + ": two states are named @" + state.name);
    const Shape& shape = state.type.shape;
    std::string problem = type_problem(state.type, true);
    if (problem.empty() && (shape.size() != 3 || shape[0].symbol != Symbol::kL || !shape[1].is_static() ||
                            !shape[2].is_static() || shape[1].value < 1 || shape[2].value < 1))
      problem = "must be [L, KV, D] with static KV, D >= 1";
    if (!problem.empty()) return invalid(where + ": state @" + state.name + " : " + state.type.to_string() + " " + problem);
  }
  names.clear();
  for (const Function& function : module.functions) {
    if (function.name.empty()) return invalid(where + ": a function has no name");
    if (!names.insert(function.name).second) return invalid(where + ": two functions are named @" + function.name);
    AC_TRY(verify_function(module, function));
  }
  return Status::ok();
}

}  // namespace agentcompile::ir
