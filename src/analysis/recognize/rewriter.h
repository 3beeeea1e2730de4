// The rewriting utility every recognition pass is written with.
//
// A pass never edits a function in place. It rebuilds it node by node (TVM's ExprMutator, in SSA form):
// a Rewriter walks the old function in order, and for each node a rule either leaves it alone (the
// node is copied with its operands mapped to their new values) or emits replacement nodes and maps the
// old result to the value that replaces it. Rules match on the old function, whose ids and use-def
// facts stay valid during the walk; the pattern's root is its last node, so every value the pattern
// reads is already mapped when the root is reached. Pattern nodes left without readers are removed
// afterwards by dead-code elimination, which also renumbers values into definition order (arguments,
// then node results named by their node index), so a rewritten module prints and parses back as itself.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "analysis/use_def.h"
#include "ir/graph.h"

namespace agentcompile::analysis::recognize {

class Rewriter {
 public:
  Rewriter(const ir::Module& module, const ir::Function& old);

  const ir::Module& module() const { return module_; }
  const ir::Function& old() const { return old_; }
  const UseDef& old_uses() const { return uses_; }
  // Per old value: computed only from weights and constants (match.h, weight_only_values).
  const std::vector<bool>& old_weight_only() const { return weight_only_; }
  // The function built so far (new ids).
  const ir::Function& current() const { return new_; }

  // The new value of an old value (arguments and every node already walked).
  ir::ValueId map(ir::ValueId old_value) const { return map_.at(static_cast<size_t>(old_value)); }
  void set_map(ir::ValueId old_value, ir::ValueId new_value) { map_.at(static_cast<size_t>(old_value)) = new_value; }

  // Copies old node `index` with its operands mapped.
  ir::ValueId copy(int index);
  // Appends a node (operands are new ids), typed by inference. On an inference error the rewriter
  // records it (status()) and returns kNoValue; a rule that checked its pattern never sees one.
  ir::ValueId emit(ir::OpKind op, std::vector<ir::ValueId> operands, ir::Attrs attrs = {});

  // Shorthands that emit nothing when there is nothing to do.
  ir::ValueId reshape(ir::ValueId value, const ir::Shape& shape);
  ir::ValueId transpose(ir::ValueId value, const std::vector<int64_t>& perm);
  ir::ValueId cast(ir::ValueId value, ir::DType dtype);
  ir::ValueId scalar(ir::DType dtype, double value);
  ir::ValueId weight(const std::string& param_name);

  const ir::TensorType& type(ir::ValueId new_value) const { return new_.type(new_value); }
  // The node that defines a new value, or nullptr for an argument.
  const ir::Node* producer(ir::ValueId new_value) const;

  // Source location given to emitted nodes (the node being rewritten).
  void set_loc(std::string loc) { loc_ = std::move(loc); }
  const Status& status() const { return status_; }

  // Maps the old results and returns the new function (not yet cleaned).
  ir::Function finish();

 private:
  const ir::Module& module_;
  const ir::Function& old_;
  UseDef uses_;
  std::vector<bool> weight_only_;
  ir::Function new_;
  std::vector<ir::ValueId> map_;
  std::string loc_;
  Status status_;
};

// A rule: given the rewriter and the index of an old node, returns the new value that replaces the
// node's result, or kNoValue to keep the node (it is then copied).
using NodeRule = std::function<ir::ValueId(Rewriter&, int)>;

// Runs `rule` over every node of every function of the module (functions listed in `skip` are left
// alone). A function in which the rule fired is replaced by its rebuilt, cleaned form; the others
// stay as they are. Returns how many times the rule fired. Errors name the pass and the function.
Expected<int> rewrite_nodes(ir::Module& module, const std::string& pass, const NodeRule& rule);

// Dead-code elimination (side effects and results are live) and renumbering: values in definition
// order, arguments keep their names, node results are named by their node index.
ir::Function clean_function(const ir::Function& function);

// Perm helpers shared by the layout-aware rules.
std::vector<int64_t> identity_perm(size_t rank);
std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm);
ir::Attrs perm_attrs(const std::vector<int64_t>& perm);
std::vector<int64_t> perm_of(const ir::Node& transpose);

}  // namespace agentcompile::analysis::recognize
