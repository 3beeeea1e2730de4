// The rewriting utility: node-by-node rebuild with a value map, dead-code elimination, renumbering.
#include "analysis/recognize/rewriter.h"

#include <set>

#include "analysis/recognize/match.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

Rewriter::Rewriter(const ir::Module& module, const ir::Function& old)
    : module_(module),
      old_(old),
      uses_(compute_use_def(old)),
      weight_only_(weight_only_values(old)),
      map_(old.values.size(), ir::kNoValue) {
  new_.name = old.name;
  for (ValueId arg : old.args) {
    const auto id = static_cast<ValueId>(new_.values.size());
    new_.values.push_back(ir::Value{old.value(arg).name, old.type(arg), -1});
    new_.args.push_back(id);
    map_[static_cast<size_t>(arg)] = id;
  }
}

ValueId Rewriter::copy(int index) {
  const ir::Node& node = old_.nodes[static_cast<size_t>(index)];
  std::vector<ValueId> operands;
  for (ValueId operand : node.operands) operands.push_back(map(operand));
  const std::string saved = loc_;
  loc_ = node.loc;
  const ValueId result = emit(node.op, std::move(operands), node.attrs);
  loc_ = saved;
  return result;
}

ValueId Rewriter::emit(OpKind op, std::vector<ValueId> operands, ir::Attrs attrs) {
  if (!status_.is_ok()) return ir::kNoValue;
  for (ValueId operand : operands) {
    if (operand < 0 || operand >= static_cast<ValueId>(new_.values.size())) {
      status_ = error(ErrorCode::kInternal, std::string(op_name(op)) + " in " + new_.name + " reads an unmapped value");
      return ir::kNoValue;
    }
  }
  ir::Node node;
  node.op = op;
  node.operands = std::move(operands);
  node.attrs = std::move(attrs);
  node.loc = loc_;
  auto type = ir::infer_result_type(module_, new_, node);
  if (!type) {
    status_ = type.status().with_context("rewriting " + new_.name + (loc_.empty() ? "" : " at " + loc_));
    return ir::kNoValue;
  }
  const auto id = static_cast<ValueId>(new_.values.size());
  node.result = id;
  new_.values.push_back(ir::Value{"r" + std::to_string(id), *type, static_cast<int32_t>(new_.nodes.size())});
  new_.nodes.push_back(std::move(node));
  return id;
}

ValueId Rewriter::reshape(ValueId value, const ir::Shape& shape) {
  if (value == ir::kNoValue || type(value).shape == shape) return value;
  return emit(OpKind::kReshape, {value}, {{"shape", shape}});
}

ValueId Rewriter::transpose(ValueId value, const std::vector<int64_t>& perm) {
  if (value == ir::kNoValue || perm == identity_perm(perm.size())) return value;
  return emit(OpKind::kTranspose, {value}, perm_attrs(perm));
}

ValueId Rewriter::cast(ValueId value, ir::DType dtype) {
  if (value == ir::kNoValue || type(value).dtype == dtype) return value;
  return emit(OpKind::kCast, {value}, {{"dtype", std::string(ir::dtype_name(dtype))}});
}

ValueId Rewriter::scalar(ir::DType dtype, double value) {
  ir::Attrs attrs{{"dtype", std::string(ir::dtype_name(dtype))}, {"shape", ir::Shape{}}};
  if (ir::is_float(dtype))
    attrs["value"] = value;
  else
    attrs["value"] = static_cast<int64_t>(value);
  return emit(OpKind::kConstant, {}, std::move(attrs));
}

ValueId Rewriter::weight(const std::string& param_name) { return emit(OpKind::kWeight, {}, {{"name", param_name}}); }

const ir::Node* Rewriter::producer(ValueId new_value) const {
  const int32_t index = new_.value(new_value).producer;
  return index < 0 ? nullptr : &new_.nodes[static_cast<size_t>(index)];
}

ir::Function Rewriter::finish() {
  for (ValueId result : old_.results) new_.results.push_back(map(result));
  return std::move(new_);
}

Expected<int> rewrite_nodes(ir::Module& module, const std::string& pass, const NodeRule& rule) {
  int fired = 0;
  for (ir::Function& function : module.functions) {
    Rewriter rewriter(module, function);
    int fired_here = 0;
    for (size_t index = 0; index < function.nodes.size(); ++index) {
      const ir::Node& node = function.nodes[index];
      rewriter.set_loc(node.loc);
      ValueId replacement = rule(rewriter, static_cast<int>(index));
      if (!rewriter.status().is_ok()) break;
      if (replacement == ir::kNoValue) {
        replacement = rewriter.copy(static_cast<int>(index));
      } else {
        ++fired_here;
      }
      if (!rewriter.status().is_ok()) break;
      rewriter.set_map(node.result, replacement);
    }
    if (!rewriter.status().is_ok()) return rewriter.status().with_context(pass + " in function @" + function.name);
    if (fired_here == 0) continue;
    fired += fired_here;
    function = clean_function(rewriter.finish());
  }
  return fired;
}

ir::Function clean_function(const ir::Function& function) {
  // Liveness, backwards: results and side effects are live, and so is every operand of a live node.
  std::vector<bool> live_value(function.values.size(), false);
  std::vector<bool> live_node(function.nodes.size(), false);
  for (ValueId result : function.results) live_value[static_cast<size_t>(result)] = true;
  for (size_t i = function.nodes.size(); i-- > 0;) {
    const ir::Node& node = function.nodes[i];
    if (!live_value[static_cast<size_t>(node.result)] && !ir::has_side_effect(node.op)) continue;
    live_node[i] = true;
    for (ValueId operand : node.operands) live_value[static_cast<size_t>(operand)] = true;
  }
  ir::Function out;
  out.name = function.name;
  std::vector<ValueId> map(function.values.size(), ir::kNoValue);
  std::set<std::string> arg_names;
  for (ValueId arg : function.args) {
    map[static_cast<size_t>(arg)] = static_cast<ValueId>(out.values.size());
    out.values.push_back(ir::Value{function.value(arg).name, function.type(arg), -1});
    out.args.push_back(map[static_cast<size_t>(arg)]);
    arg_names.insert(function.value(arg).name);
  }
  for (size_t i = 0; i < function.nodes.size(); ++i) {
    if (!live_node[i]) continue;
    ir::Node node = function.nodes[i];
    for (ValueId& operand : node.operands) operand = map[static_cast<size_t>(operand)];
    const auto id = static_cast<ValueId>(out.values.size());
    map[static_cast<size_t>(node.result)] = id;
    std::string name = std::to_string(out.nodes.size());
    while (arg_names.count(name)) name = "v" + name;  // an argument that is itself named like a number
    out.values.push_back(ir::Value{name, function.type(node.result), static_cast<int32_t>(out.nodes.size())});
    node.result = id;
    out.nodes.push_back(std::move(node));
  }
  for (ValueId result : function.results) out.results.push_back(map[static_cast<size_t>(result)]);
  return out;
}

std::vector<int64_t> identity_perm(size_t rank) {
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  return perm;
}

std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

ir::Attrs perm_attrs(const std::vector<int64_t>& perm) {
  ir::Shape dims;
  for (int64_t p : perm) dims.push_back(ir::Dim::of(p));
  return {{"perm", dims}};
}

std::vector<int64_t> perm_of(const ir::Node& transpose) {
  std::vector<int64_t> perm;
  for (const ir::Dim& d : transpose.dims_attr("perm")) perm.push_back(d.value);
  return perm;
}

}  // namespace agentcompile::analysis::recognize
