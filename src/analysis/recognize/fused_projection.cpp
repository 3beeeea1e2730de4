// Pass: fused projections (rule 10).
//
// Phi-3 computes q, k and v with one qkv_proj and splits the result (qkv[..., :q_pos], ...), and its
// MLP's gate_up_proj is chunked in two. The horizontal fusion and the GEMV families look for ordinary
// q/k/v and gate/up linears that read the same input, so:
//   y = linear(x, W[N, K] (, b[N]));  every reader of y is slice(y) {axis = last, start_i, length_i},
//   and the slices partition [0, N)
//   -> slice i becomes linear(x, W.i (, b.i)), where W.i is a parameter ALIAS of rows
//      [start_i, start_i + length_i) of W (ParamDecl::alias_of / alias_row: no bytes of its own).
// Aliases are named "<fused weight name>.<i>" (i counts the slices from the first row) and declared
// once per module (prefill and decode share them). W stays declared: it owns the bytes.
// Refuses: slices that overlap, leave rows unread, or cut another axis; a linear whose result is also
// read whole (the fused GEMM is then needed anyway); weights that are themselves aliases.
#include <algorithm>

#include "analysis/recognize/match.h"
#include "analysis/recognize/passes.h"
#include "analysis/recognize/rewriter.h"

namespace agentcompile::analysis::recognize {

using ir::OpKind;
using ir::ValueId;

namespace {

struct Part {
  int64_t start = 0;
  int64_t length = 0;
};

// The row ranges of the linear defining `value`, when its readers are slices partitioning its last
// axis; empty otherwise.
std::vector<Part> partition(const ir::Function& f, const UseDef& uses, ValueId value) {
  const ir::Shape& shape = f.type(value).shape;
  if (shape.empty() || !shape.back().is_static() || uses.is_result[static_cast<size_t>(value)]) return {};
  const int64_t n = shape.back().value;
  std::vector<Part> parts;
  for (int user : uses.users[static_cast<size_t>(value)]) {
    const ir::Node& slice = f.nodes[static_cast<size_t>(user)];
    if (slice.op != OpKind::kSlice || normalize_axis(slice.int_attr("axis"), shape.size()) != static_cast<int64_t>(shape.size()) - 1)
      return {};
    const int64_t start = slice.int_attr("start") < 0 ? slice.int_attr("start") + n : slice.int_attr("start");
    parts.push_back(Part{start, slice.int_attr("length")});
  }
  std::sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.start < b.start; });
  int64_t next = 0;
  for (const Part& part : parts) {
    if (part.start != next) return {};
    next += part.length;
  }
  if (next != n || parts.size() < 2) return {};
  return parts;
}

// Declares the alias of rows [start, start + rows) of `source` (once) and returns its name.
std::string declare_alias(ir::Module& module, const std::string& source, int index, int64_t start, int64_t rows) {
  const std::string name = source + "." + std::to_string(index);
  if (module.find_param(name)) return name;
  ir::ParamDecl alias = *module.find_param(source);
  alias.name = name;
  alias.type.shape[0] = ir::Dim::of(rows);
  alias.alias_of = source;
  alias.alias_row = start;
  module.params.push_back(std::move(alias));
  return name;
}

ValueId rewrite(ir::Module& module, Rewriter& rw, int index) {
  const ir::Function& f = rw.old();
  const ir::Node& node = f.nodes[static_cast<size_t>(index)];
  if (node.op != OpKind::kSlice) return ir::kNoValue;
  const ir::Node* linear = producer_of(f, node.operands[0], OpKind::kLinear);
  if (!linear) return ir::kNoValue;
  const std::vector<Part> parts = partition(f, rw.old_uses(), node.operands[0]);
  if (parts.empty()) return ir::kNoValue;
  std::vector<std::string> sources;
  for (size_t i = 1; i < linear->operands.size(); ++i) {
    const ir::Node* weight = producer_of(f, linear->operands[i], OpKind::kWeight);
    const ir::ParamDecl* param = weight ? module.find_param(weight->string_attr("name")) : nullptr;
    if (!param || param->is_alias()) return ir::kNoValue;
    sources.push_back(param->name);
  }
  const int64_t n = f.type(node.operands[0]).shape.back().value;
  const int64_t start = node.int_attr("start") < 0 ? node.int_attr("start") + n : node.int_attr("start");
  const auto part = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.start == start; });
  const int which = static_cast<int>(part - parts.begin());
  std::vector<ValueId> operands{rw.map(linear->operands[0])};
  for (const std::string& source : sources)
    operands.push_back(rw.weight(declare_alias(module, source, which, part->start, part->length)));
  return rw.emit(OpKind::kLinear, operands);
}

}  // namespace

Expected<int> split_fused_projections(ir::Module& module) {
  return rewrite_nodes(module, "fused_projection", [&](Rewriter& rw, int index) { return rewrite(module, rw, index); });
}

}  // namespace agentcompile::analysis::recognize
