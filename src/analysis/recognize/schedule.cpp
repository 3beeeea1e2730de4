// Pass: canonical schedule (rule 12).
//
// A deterministic topological order of each function that the graph builders' own output already
// has, so a captured graph and a built one print alike and region formation (which cuts the node
// order into contiguous segments) finds the same regions:
//   (a) compute nodes keep their relative order, except that emitting a linear also emits, right
//       after it, every later linear that reads the same input (through reshapes) and is ready: the
//       horizontal QKV and gate/up fusions need them consecutive (regions.cpp);
//   (b) a weight node is emitted right before each node that reads it, once per reader (a tied
//       embedding gets one weight node at the embedding and one at the LM head); constants, aranges
//       and views of arguments, weights or constants are emitted right before their first reader;
//   (c) side effects are compute nodes, so their relative order is kept, and nothing moves across
//       one unless the data dependences allow it (states are only read through kv_append results);
//   (d) a view of a computed value (reshape, transpose, slice, broadcast, flip) is emitted right after
//       its producer, in its original order, with the views of that view after it.
// Values are then renumbered into definition order (node results named by node index). Parameters
// are put in their canonical order (param_order.h) as the last step.
#include <set>

#include "analysis/recognize/match.h"
#include "analysis/recognize/param_order.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

bool is_view(const ir::Node& node) { return ir::is_layout(node.op) && node.operands.size() == 1; }
bool is_source(const ir::Node& node) { return ir::op_info(node.op).op_class == ir::OpClass::kSource; }

class Scheduler {
 public:
  Scheduler(const ir::Module& module, const ir::Function& f)
      : f_(f), rw_(module, f), emitted_(f.nodes.size(), false), views_after_(f.values.size()) {
    for (size_t i = 0; i < f.nodes.size(); ++i) {
      const ir::Node& node = f.nodes[i];
      if (is_view(node)) views_after_[static_cast<size_t>(node.operands[0])].push_back(static_cast<int>(i));
    }
  }

  Expected<ir::Function> run() {
    for (size_t i = 0; i < f_.nodes.size(); ++i) {
      const ir::Node& node = f_.nodes[i];
      if (emitted_[i] || is_view(node) || is_source(node)) continue;
      emit_node(static_cast<int>(i));
      if (node.op == OpKind::kLinear) pull_siblings(static_cast<int>(i));
    }
    // Anything left (views and sources nobody computes from) keeps its place at the end.
    for (size_t i = 0; i < f_.nodes.size(); ++i)
      if (!emitted_[i]) emit_node(static_cast<int>(i));
    if (!rw_.status().is_ok()) return rw_.status().with_context("schedule of function @" + f_.name);
    return clean_function(rw_.finish());
  }

 private:
  const ir::Node* producer_node(ValueId value) const { return producer(f_, value); }

  // The activation a linear reads, seen through reshapes.
  ValueId linear_input(const ir::Node& node) const {
    ValueId value = node.operands[0];
    while (const ir::Node* p = producer_node(value)) {
      if (p->op != OpKind::kReshape && p->op != OpKind::kView) break;
      value = p->operands[0];
    }
    return value;
  }

  // True when `value` can be read now (computed values must have been emitted).
  bool ready(ValueId value) const {
    const ir::Node* p = producer_node(value);
    if (!p || is_source(*p) || emitted_[static_cast<size_t>(f_.value(value).producer)]) return true;
    return is_view(*p) && ready(p->operands[0]);
  }

  // Makes an operand available right before its reader: sources and views of weights/arguments/
  // sources are emitted on demand; weights are handled per reader in emit_node.
  void make_available(ValueId value) {
    const ir::Node* p = producer_node(value);
    if (!p || p->op == OpKind::kWeight) return;
    const int index = f_.value(value).producer;
    if (emitted_[static_cast<size_t>(index)]) return;
    if (is_source(*p) || is_view(*p)) emit_node(index);
  }

  // Emits node `index`: its operands made available first, a fresh weight node per weight operand.
  void emit_node(int index) {
    const ir::Node& node = f_.nodes[static_cast<size_t>(index)];
    emitted_[static_cast<size_t>(index)] = true;
    std::set<ValueId> weights;
    for (ValueId operand : node.operands) {
      const ir::Node* p = producer_node(operand);
      if (p && p->op == OpKind::kWeight) {
        if (!weights.insert(operand).second) continue;
        rw_.set_loc(p->loc);
        rw_.set_map(operand, rw_.emit(OpKind::kWeight, {}, p->attrs));
      } else {
        make_available(operand);
      }
    }
    if (node.op == OpKind::kWeight) {
      rw_.set_loc(node.loc);
      rw_.set_map(node.result, rw_.emit(OpKind::kWeight, {}, node.attrs));  // an unread weight
      return;
    }
    rw_.set_map(node.result, rw_.copy(index));
    if (is_source(node)) return;  // views of sources are emitted right before their readers
    for (int view : views_after_[static_cast<size_t>(node.result)])
      if (!emitted_[static_cast<size_t>(view)]) emit_node(view);
  }

  void pull_siblings(int index) {
    const ValueId input = linear_input(f_.nodes[static_cast<size_t>(index)]);
    for (size_t j = static_cast<size_t>(index) + 1; j < f_.nodes.size(); ++j) {
      const ir::Node& other = f_.nodes[j];
      if (emitted_[j] || other.op != OpKind::kLinear || linear_input(other) != input) continue;
      bool operands_ready = true;
      for (ValueId operand : other.operands) operands_ready = operands_ready && ready(operand);
      if (operands_ready) emit_node(static_cast<int>(j));
    }
  }

  const ir::Function& f_;
  Rewriter rw_;
  std::vector<bool> emitted_;
  std::vector<std::vector<int>> views_after_;
};

}  // namespace

Expected<int> schedule_module(ir::Module& module) {
  int changed = 0;
  for (ir::Function& function : module.functions) {
    AC_ASSIGN_OR_RETURN(ir::Function scheduled, Scheduler(module, function).run());
    if (!(scheduled == clean_function(function))) ++changed;
    function = std::move(scheduled);
  }
  if (order_parameters(module)) ++changed;
  return changed;
}

}  // namespace agentcompile::analysis::recognize
