// Pass: hoist weight-only expressions (rule 9).
//
// A value computed only from weights and constants is the same at every step: Gemma's RMSNorm weight
// (1 + w) in f32, a sum of two biases, a weight cast to f32 for a multiply. Such subgraphs move out of
// the per-step functions into one module function
//   func @init() -> (...)
// whose results become new parameters; the step functions read them with plain weight nodes, which
// the kernel families take like any parameter (an RMSNorm weight, a linear bias).
//
// THE CONVENTION (the runtime's side): a module may have a function named "init" without arguments.
// It returns one result per parameter whose name starts with "init.", in the order those parameters
// are declared in the module, and nothing else; the runtime runs it once at load (with the reference
// interpreter, after the other parameters are loaded) and binds each result to its parameter. Those
// parameters are named "init.<the first weight the expression reads>.<k>" (k = 0, 1, ... per weight),
// so names are deterministic and say where the value comes from; schedule_module keeps the result
// order in step with the declaration order when it reorders parameters.
//
// Roots: weight-only values (match.h) that contain at least one weight and one op other than a layout
// op (a transposed or reshaped weight stays where it is: it is a view the consumer absorbs), read by a
// node that is not weight-only or returned. Equal expressions (same ops, attributes and weights, also
// across prefill and decode) share one parameter. Nothing in @init is hoisted again.
#include <map>
#include <memory>
#include <set>

#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

constexpr const char* kInitFunction = "init";

struct Facts {
  std::vector<bool> weight_only;
  std::vector<bool> has_weight;
  std::vector<bool> has_compute;
  std::vector<std::string> key;          // canonical text of the expression
  std::vector<std::string> first_weight;
};

Facts analyze(const ir::Function& f) {
  Facts facts{weight_only_values(f), std::vector<bool>(f.values.size(), false), std::vector<bool>(f.values.size(), false),
              std::vector<std::string>(f.values.size()), std::vector<std::string>(f.values.size())};
  for (const ir::Node& node : f.nodes) {
    const auto r = static_cast<size_t>(node.result);
    if (!facts.weight_only[r]) continue;
    std::string key = std::string(op_name(node.op)) + "{";
    for (const auto& [name, value] : node.attrs) key += name + "=" + ir::attr_to_string(value) + ";";
    key += "}(";
    facts.has_weight[r] = node.op == OpKind::kWeight;
    facts.has_compute[r] = ir::op_info(node.op).op_class != ir::OpClass::kSource && !ir::is_layout(node.op);
    if (node.op == OpKind::kWeight) facts.first_weight[r] = node.string_attr("name");
    for (ValueId operand : node.operands) {
      const auto o = static_cast<size_t>(operand);
      key += facts.key[o] + ",";
      facts.has_weight[r] = facts.has_weight[r] || facts.has_weight[o];
      facts.has_compute[r] = facts.has_compute[r] || facts.has_compute[o];
      if (facts.first_weight[r].empty()) facts.first_weight[r] = facts.first_weight[o];
    }
    facts.key[r] = key + ")";
  }
  return facts;
}

class Hoister {
 public:
  explicit Hoister(ir::Module& module) : module_(module) {
    for (const ir::ParamDecl& param : module.params) names_.insert(param.name);
  }

  Expected<int> run() {
    // The existing @init (if any) is rebuilt with the new expressions appended.
    ir::Function empty;
    empty.name = kInitFunction;
    const ir::Function* existing = module_.find_function(kInitFunction);
    const ir::Function old_init = existing ? *existing : empty;
    init_ = std::make_unique<Rewriter>(module_, old_init);
    for (size_t i = 0; i < old_init.nodes.size(); ++i) init_->set_map(old_init.nodes[i].result, init_->copy(static_cast<int>(i)));
    int fired = 0;
    for (size_t index = 0; index < module_.functions.size(); ++index) {
      if (module_.functions[index].name == kInitFunction) continue;
      AC_ASSIGN_OR_RETURN(int hoisted, hoist_from(index));
      fired += hoisted;
    }
    if (!init_->status().is_ok()) return init_->status().with_context("hoist_weights building @init");
    if (fired == 0) return 0;
    ir::Function init = init_->finish();
    for (ValueId value : new_results_) init.results.push_back(value);
    init = clean_function(init);
    for (ir::Function& function : module_.functions) {
      if (function.name != kInitFunction) continue;
      function = std::move(init);
      return fired;
    }
    module_.functions.push_back(std::move(init));
    return fired;
  }

 private:
  // Copies the expression behind `value` of `f` into @init; returns its value there.
  ValueId copy_expression(const ir::Function& f, const Facts& facts, ValueId value) {
    const std::string& key = facts.key[static_cast<size_t>(value)];
    if (auto it = init_values_.find(key); it != init_values_.end()) return it->second;
    const ir::Node& node = *producer(f, value);
    std::vector<ValueId> operands;
    for (ValueId operand : node.operands) operands.push_back(copy_expression(f, facts, operand));
    init_->set_loc(node.loc);
    const ValueId copied = init_->emit(node.op, operands, node.attrs);
    init_values_[key] = copied;
    return copied;
  }

  // The parameter holding the value of root `value` of `f` (declared on first sight).
  std::string parameter_for(const ir::Function& f, const Facts& facts, ValueId value) {
    const std::string& key = facts.key[static_cast<size_t>(value)];
    if (auto it = params_.find(key); it != params_.end()) return it->second;
    std::string name;
    for (int k = 0; name.empty() || names_.count(name); ++k) name = "init." + facts.first_weight[static_cast<size_t>(value)] + "." + std::to_string(k);
    names_.insert(name);
    ir::ParamDecl param;
    param.name = name;
    param.type = f.type(value);
    module_.params.push_back(std::move(param));
    new_results_.push_back(copy_expression(f, facts, value));
    params_[key] = name;
    return name;
  }

  Expected<int> hoist_from(size_t index) {
    const ir::Function& f = module_.functions[index];
    const Facts facts = analyze(f);
    const UseDef uses = compute_use_def(f);
    std::map<ValueId, std::string> roots;
    for (const ir::Node& node : f.nodes) {
      const auto r = static_cast<size_t>(node.result);
      if (!facts.weight_only[r] || !facts.has_weight[r] || !facts.has_compute[r] || !ir::shape_is_static(f.type(node.result).shape))
        continue;
      bool read_outside = uses.is_result[r];
      for (int user : uses.users[r]) read_outside = read_outside || !facts.weight_only[static_cast<size_t>(f.nodes[static_cast<size_t>(user)].result)];
      if (read_outside) roots[node.result] = parameter_for(f, facts, node.result);
    }
    if (roots.empty()) return 0;
    ir::Module& module = module_;
    ir::Function& target = module.functions[index];
    Rewriter rw(module, target);
    for (size_t i = 0; i < target.nodes.size(); ++i) {
      const ir::Node& node = target.nodes[i];
      rw.set_loc(node.loc);
      auto it = roots.find(node.result);
      rw.set_map(node.result, it != roots.end() ? rw.weight(it->second) : rw.copy(static_cast<int>(i)));
    }
    if (!rw.status().is_ok()) return rw.status().with_context("hoist_weights in function @" + target.name);
    target = clean_function(rw.finish());
    return static_cast<int>(roots.size());
  }

  ir::Module& module_;
  std::set<std::string> names_;
  std::unique_ptr<Rewriter> init_;
  std::map<std::string, ValueId> init_values_;
  std::map<std::string, std::string> params_;
  std::vector<ValueId> new_results_;
};

}  // namespace

Expected<int> hoist_weight_expressions(ir::Module& module) { return Hoister(module).run(); }

}  // namespace agentcompile::analysis::recognize
