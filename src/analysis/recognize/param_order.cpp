// The canonical parameter order (see param_order.h).
#include "analysis/recognize/param_order.h"

#include <algorithm>
#include <climits>
#include <map>
#include <memory>

namespace agentcompile::analysis::recognize {

namespace {

constexpr const char* kInitPrefix = "init.";

struct TreeNode {
  int param = -1;  // index into the declared params, when a parameter ends here
  std::vector<std::pair<std::string, std::unique_ptr<TreeNode>>> children;  // in declaration order
  long first_use = LONG_MAX;
  size_t first_declared = SIZE_MAX;
  bool matrix = false;  // a linear, matmul or embedding reads a parameter below as its table

  TreeNode* child(const std::string& name) {
    for (auto& [key, node] : children)
      if (key == name) return node.get();
    children.emplace_back(name, std::make_unique<TreeNode>());
    return children.back().second.get();
  }
  bool is_param_only() const { return param >= 0 && children.empty(); }
  bool is_leaf_module() const {
    return param < 0 && std::all_of(children.begin(), children.end(), [](const auto& c) { return c.second->is_param_only(); });
  }
};

std::vector<std::string> components(const std::string& name) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    out.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// The parameter a derived one comes from ("" for a base parameter).
std::string source_of(const ir::Module& module, const ir::ParamDecl& param) {
  if (param.is_alias()) return param.alias_of;
  if (param.name.rfind(kInitPrefix, 0) != 0) return "";
  const size_t dot = param.name.rfind('.');
  const std::string source = param.name.substr(5, dot - 5);
  return module.find_param(source) ? source : "";
}

void summarize(TreeNode& node, const std::vector<long>& first_use, const std::vector<bool>& matrix) {
  if (node.param >= 0) {
    node.first_use = first_use[static_cast<size_t>(node.param)];
    node.first_declared = static_cast<size_t>(node.param);
    node.matrix = matrix[static_cast<size_t>(node.param)];
  }
  for (auto& [name, child] : node.children) {
    summarize(*child, first_use, matrix);
    node.first_use = std::min(node.first_use, child->first_use);
    node.first_declared = std::min(node.first_declared, child->first_declared);
    node.matrix = node.matrix || child->matrix;
  }
}

void emit(TreeNode& node, const std::map<int, std::vector<int>>& derived, std::vector<int>& order) {
  if (node.param >= 0) {
    order.push_back(node.param);
    if (auto it = derived.find(node.param); it != derived.end()) order.insert(order.end(), it->second.begin(), it->second.end());
  }
  std::vector<TreeNode*> children;
  for (auto& [name, child] : node.children) children.push_back(child.get());
  const bool leaves = std::all_of(children.begin(), children.end(), [](const TreeNode* c) { return c->is_param_only() || c->is_leaf_module(); });
  std::stable_sort(children.begin(), children.end(), [&](const TreeNode* a, const TreeNode* b) {
    if (leaves && a->matrix != b->matrix) return a->matrix;
    if (a->first_use != b->first_use) return a->first_use < b->first_use;
    return a->first_declared < b->first_declared;
  });
  for (TreeNode* child : children) emit(*child, derived, order);
}

}  // namespace

bool order_parameters(ir::Module& module) {
  std::map<std::string, int> index_of;
  for (size_t i = 0; i < module.params.size(); ++i) index_of[module.params[i].name] = static_cast<int>(i);
  std::vector<long> first_use(module.params.size(), LONG_MAX);
  std::vector<bool> matrix(module.params.size(), false);
  long counter = 0;
  for (const ir::Function& function : module.functions) {
    for (const ir::Node& node : function.nodes) {
      // A table read by a matmul-class op or an embedding (the weight operand, not the activation).
      if (node.op == ir::OpKind::kLinear || node.op == ir::OpKind::kMatmul || node.op == ir::OpKind::kEmbedding) {
        const ir::ValueId table = node.operands[node.op == ir::OpKind::kEmbedding ? 0 : 1];
        const int32_t producer = function.value(table).producer;
        if (producer >= 0 && function.nodes[static_cast<size_t>(producer)].op == ir::OpKind::kWeight) {
          auto it = index_of.find(function.nodes[static_cast<size_t>(producer)].string_attr("name"));
          if (it != index_of.end()) matrix[static_cast<size_t>(it->second)] = true;
        }
      }
      if (node.op != ir::OpKind::kWeight) continue;
      auto it = index_of.find(node.string_attr("name"));
      if (it != index_of.end()) first_use[static_cast<size_t>(it->second)] = std::min(first_use[static_cast<size_t>(it->second)], counter);
      ++counter;
    }
  }
  TreeNode root;
  std::map<int, std::vector<int>> derived;
  for (size_t i = 0; i < module.params.size(); ++i) {
    const std::string source = source_of(module, module.params[i]);
    if (!source.empty()) {
      const int s = index_of.at(source);
      derived[s].push_back(static_cast<int>(i));
      first_use[static_cast<size_t>(s)] = std::min(first_use[static_cast<size_t>(s)], first_use[i]);
      continue;
    }
    TreeNode* node = &root;
    for (const std::string& part : components(module.params[i].name)) node = node->child(part);
    node->param = static_cast<int>(i);
  }
  // A derived parameter (an alias read by a linear) makes its source a matrix too.
  for (const auto& [source, list] : derived)
    for (int d : list) matrix[static_cast<size_t>(source)] = matrix[static_cast<size_t>(source)] || matrix[static_cast<size_t>(d)];
  summarize(root, first_use, matrix);
  std::vector<int> order;
  emit(root, derived, order);
  bool changed = false;
  std::vector<ir::ParamDecl> params;
  for (size_t i = 0; i < order.size(); ++i) {
    changed = changed || order[i] != static_cast<int>(i);
    params.push_back(module.params[static_cast<size_t>(order[i])]);
  }
  if (!changed || order.size() != module.params.size()) return false;
  // @init returns the init.* parameters in declaration order: its results follow them.
  for (ir::Function& function : module.functions) {
    if (function.name != "init") continue;
    std::map<std::string, ir::ValueId> result_of;
    size_t next = 0;
    for (const ir::ParamDecl& param : module.params)
      if (param.name.rfind(kInitPrefix, 0) == 0 && next < function.results.size()) result_of[param.name] = function.results[next++];
    std::vector<ir::ValueId> results;
    for (const ir::ParamDecl& param : params)
      if (result_of.count(param.name)) results.push_back(result_of[param.name]);
    if (results.size() == function.results.size()) function.results = std::move(results);
  }
  module.params = std::move(params);
  return true;
}

}  // namespace agentcompile::analysis::recognize
