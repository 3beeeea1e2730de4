// Region formation (see regions.h for the rules).
#include "analysis/regions.h"

#include <algorithm>
#include <set>

#include "analysis/use_def.h"

namespace agentcompile::analysis {

using ir::OpClass;
using ir::OpKind;

const char* region_kind_name(RegionKind kind) {
  switch (kind) {
    case RegionKind::kGather: return "gather";
    case RegionKind::kMatmul: return "matmul";
    case RegionKind::kFusion: return "fusion";
    case RegionKind::kAttention: return "attention";
    case RegionKind::kCopy: return "copy";
    case RegionKind::kCollective: return "collective";
  }
  return "?";
}

bool is_view_node(const ir::Node& node) {
  switch (node.op) {
    case OpKind::kReshape:
    case OpKind::kView:
    case OpKind::kBroadcast:
      return true;
    case OpKind::kSlice:
      return node.int_attr("axis") == 0;  // a row range of a row-major buffer: an offset, no copy
    default:
      return false;
  }
}

bool is_source_node(const ir::Node& node) { return ir::op_info(node.op).op_class == OpClass::kSource; }

bool is_row_op(OpKind op) {
  switch (ir::op_info(op).op_class) {
    case OpClass::kNorm:
    case OpClass::kSoftmax:
    case OpClass::kReduction:
    case OpClass::kScan: return true;
    default: return false;
  }
}

namespace {

// Whether a shape holds more elements than another (a broadcast that repeats data): compares the
// static products and how often each symbol appears.
bool holds_more(const ir::Shape& big, const ir::Shape& small) {
  auto symbols = [](const ir::Shape& s, ir::Symbol symbol) {
    return std::count_if(s.begin(), s.end(), [&](const ir::Dim& d) { return d.symbol == symbol; });
  };
  return ir::static_elements(big) != ir::static_elements(small) || symbols(big, ir::Symbol::kT) != symbols(small, ir::Symbol::kT) ||
         symbols(big, ir::Symbol::kL) != symbols(small, ir::Symbol::kL);
}

}  // namespace

ir::ValueId bound_value(const ir::Function& function, ir::ValueId operand) {
  const int producer = function.value(operand).producer;
  if (producer < 0) return operand;
  const ir::Node& node = function.nodes[static_cast<size_t>(producer)];
  if (node.op != OpKind::kBroadcast || !holds_more(function.type(operand).shape, function.type(node.operands[0]).shape)) return operand;
  return node.operands[0];
}

namespace {

bool is_fusable(OpClass op_class) {
  return op_class == OpClass::kPointwise || op_class == OpClass::kNorm || op_class == OpClass::kRope ||
         op_class == OpClass::kSoftmax || op_class == OpClass::kReduction || op_class == OpClass::kScan;
}

// A transpose that swaps the last two axes and nothing else: a GEMM operand read transposed.
bool swaps_last_two(const ir::Node& node) {
  if (node.op != OpKind::kTranspose) return false;
  const auto perm = node.dims_attr("perm");
  const size_t r = perm.size();
  if (r < 2) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i].value != static_cast<int64_t>(i)) return false;
  return perm[r - 2].value == static_cast<int64_t>(r - 1) && perm[r - 1].value == static_cast<int64_t>(r - 2);
}

// Sees through view nodes to the value that a compute node really reads.
ir::ValueId through_views(const ir::Function& function, ir::ValueId value, std::vector<int>* views) {
  while (true) {
    const int producer = function.value(value).producer;
    if (producer < 0 || !is_view_node(function.nodes[static_cast<size_t>(producer)])) return value;
    if (views) views->push_back(producer);
    value = function.nodes[static_cast<size_t>(producer)].operands[0];
  }
}

class Segmenter {
 public:
  Segmenter(const ir::Function& function, const RegionOptions& options)
      : function_(function), options_(options), facts_(compute_use_def(function)) {
    partition_.function = function.name;
    partition_.region_of_node.assign(function.nodes.size(), -1);
  }

  RegionPartition run() {
    for (size_t i = 0; i < function_.nodes.size(); ++i) place(static_cast<int>(i));
    finish();
    return std::move(partition_);
  }

 private:
  const ir::Node& node(int index) const { return function_.nodes[static_cast<size_t>(index)]; }

  bool defined_in_current(ir::ValueId value) const {
    if (!current_) return false;
    const ir::ValueId root = through_views(function_, value, nullptr);
    const int producer = function_.value(root).producer;
    return producer >= 0 && partition_.region_of_node[static_cast<size_t>(producer)] == current_->index;
  }

  bool uses_current(const ir::Node& n) const {
    return std::any_of(n.operands.begin(), n.operands.end(), [&](ir::ValueId v) { return defined_in_current(v); });
  }

  // A row slice of a value computed in the current region (the last token's row of a residual sum):
  // the rows differ, so the reader starts a region of its own. With `any_view`, any view of such a
  // value (a reshape, a broadcast): a row program computes one iteration space, and a value reshaped
  // inside it has no place there.
  bool reads_current_through_view(const ir::Node& n, bool any_view) const {
    for (ir::ValueId operand : n.operands) {
      if (!defined_in_current(operand)) continue;
      std::vector<int> views;
      through_views(function_, operand, &views);
      for (int view : views)
        if (any_view || node(view).op == OpKind::kSlice) return true;
    }
    return false;
  }

  // A cast between float dtypes: a relabel in the IR's semantics (the interpreter keeps f32 values),
  // which the kernels that compute in f32 and round once at their stores treat as nothing. Graphs
  // that normalize in f32 (Gemma's RMSNorm, as analysis/recognize raises it) put them around norms.
  bool is_float_cast(const ir::Node& n) const {
    return n.op == OpKind::kCast && ir::is_float(function_.type(n.operands[0]).dtype) && ir::is_float(function_.type(n.result).dtype);
  }

  // A float cast whose every reader is a row op (the f32 copy of a residual sum that the next norm
  // reads): it goes with that norm's region, not the one it reads from.
  bool feeds_only_row_ops(const ir::Node& n) const {
    const auto& users = facts_.users[static_cast<size_t>(n.result)];
    return is_float_cast(n) && !users.empty() && !facts_.is_result[static_cast<size_t>(n.result)] &&
           std::all_of(users.begin(), users.end(), [&](int user) { return is_row_op(node(user).op); });
  }

  // A float cast that reads nothing of the region and whose every reader reads a value downstream of the
  // region's reductions, so that none of them can join it (the copy of a widened input that a variance
  // reads after its mean, analysis/recognize/shared_casts.cpp): it goes with its readers, not here,
  // where the region would write its result for them to read.
  bool feeds_only_past_reductions(const ir::Node& n) const {
    if (!is_float_cast(n) || uses_current(n) || facts_.is_result[static_cast<size_t>(n.result)]) return false;
    const auto& users = facts_.users[static_cast<size_t>(n.result)];
    return !users.empty() && std::all_of(users.begin(), users.end(), [&](int user) { return reads_after_row_op(node(user), true); });
  }

  // The activation a matmul reads (its first operand, seen through views).
  ir::ValueId matmul_input(const ir::Node& n) const { return through_views(function_, n.operands[0], nullptr); }

  // Whether `n` reads a value of the current region that lies downstream of the region's row ops
  // (`reduced`: of its reductions only).
  bool reads_after_row_op(const ir::Node& n, bool reduced) const {
    const auto& marked = reduced ? after_reduction_ : after_row_op_;
    return std::any_of(n.operands.begin(), n.operands.end(),
                       [&](ir::ValueId v) { return marked.count(through_views(function_, v, nullptr)) > 0; });
  }

  bool joins_fusion(const ir::Node& n) const {
    if (n.op == OpKind::kKvAppend) return true;
    const OpClass op_class = ir::op_info(n.op).op_class;
    if (current_->has_side_effect || !is_fusable(op_class)) return false;
    // RoPE regions (the rope_kv family) take their heads through reshapes; row programs take nothing
    // computed inside through a view.
    if (reads_current_through_view(n, op_class != OpClass::kRope)) return false;
    if (reads_after_row_op(n, true)) return false;  // a reduction's result has another shape
    // The f32 copy of a value the region's row op computed, read only by the next norm (Gemma's sandwich
    // norms: post-norm, residual add, pre-norm) goes with that norm, which starts a region of its own.
    if (feeds_only_row_ops(n) && reads_after_row_op(n, false)) return false;
    if (feeds_only_past_reductions(n)) return false;
    if (starts_another_space(n)) return false;
    if (is_row_op(n.op) && !row_ops_.empty()) {
      // The one exception: independent RMSNorms (a QK-norm pair) share the region of their RoPE.
      const bool all_rmsnorm = std::all_of(row_ops_.begin(), row_ops_.end(), [](OpKind op) { return op == OpKind::kRmsNorm; });
      return n.op == OpKind::kRmsNorm && all_rmsnorm && !reads_after_row_op(n, false);
    }
    return true;
  }

  // The shape a node iterates over: a row op's input, any other node's result.
  const ir::Shape& iteration_shape(const ir::Node& n) const {
    return function_.type(is_row_op(n.op) && !n.operands.empty() ? n.operands[0] : n.result).shape;
  }

  // Whether `small` broadcasts into `big` numpy style (trailing dims equal or a static 1).
  static bool broadcasts_into(const ir::Shape& small, const ir::Shape& big) {
    if (small.size() > big.size()) return false;
    for (size_t i = 0; i < small.size(); ++i) {
      const ir::Dim& d = small[small.size() - 1 - i];
      if (!(d == big[big.size() - 1 - i]) && !(d.is_static() && d.value == 1)) return false;
    }
    return true;
  }

  // A node that reads nothing of the current fusion region and iterates over a shape that does not
  // broadcast into the region's is an independent computation (the per-row result of an earlier
  // reduction, an index vector beside a softmax, a reduction of another tensor after a scalar): a
  // region computes one iteration space, so it starts a region of its own. One that broadcasts
  // into it (an expression of a per-head weight) joins. Regions with norms, RoPE or side effects
  // keep their rules (a QK-norm pair and the RoPE of heads of other counts share one region).
  bool starts_another_space(const ir::Node& n) const {
    const OpClass op_class = ir::op_info(n.op).op_class;
    if (op_class != OpClass::kPointwise && op_class != OpClass::kReduction && op_class != OpClass::kSoftmax && op_class != OpClass::kScan)
      return false;
    if (current_->has_side_effect || uses_current(n) || broadcasts_into(iteration_shape(n), space_)) return false;
    return std::none_of(current_->nodes.begin(), current_->nodes.end(), [&](int member) {
      const OpClass c = ir::op_info(node(member).op).op_class;
      return c == OpClass::kNorm || c == OpClass::kRope;
    });
  }

  // A pointwise epilogue of the current matmul region: reads the region (or only constants and
  // aranges, such as a triangular mask's comparison) and keeps the matmul's shape.
  bool joins_as_epilogue(const ir::Node& n) const {
    if (ir::op_info(n.op).op_class != OpClass::kPointwise || function_.type(n.result).shape != matmul_shape_) return false;
    const bool sources_only = std::all_of(n.operands.begin(), n.operands.end(), [&](ir::ValueId v) {
      const int producer = function_.value(through_views(function_, v, nullptr)).producer;
      return producer >= 0 && is_source_node(node(producer));
    });
    // A cast on its way into a norm goes with the norm (a graph that normalizes in f32).
    return (uses_current(n) || sources_only) && !feeds_only_row_ops(n);
  }

  bool joins_current(int index) const {
    if (!current_) return false;
    const ir::Node& n = node(index);
    const OpClass op_class = ir::op_info(n.op).op_class;
    switch (current_->kind) {
      case RegionKind::kMatmul:
        if (operand_transposes_only_) return n.op == OpKind::kMatmul || (swaps_last_two(n) && feeds_next_matmul(index));
        if (!options_.matmul_fusion) return false;
        if (op_class == OpClass::kMatmul)  // horizontal fusion: same input, no epilogue yet
          return !matmul_has_epilogue_ && n.op == OpKind::kLinear && matmul_input(n) == matmul_input_;
        return joins_as_epilogue(n);
      case RegionKind::kFusion:
        return joins_fusion(n);
      default:
        return false;
    }
  }

  // A transpose of the last two axes whose result only the next matmul reads (as either operand;
  // other such transposes of its operands may come between): it joins that matmul's region.
  bool feeds_next_matmul(int index) const {
    const ir::Node& t = node(index);
    if (!swaps_last_two(t) || facts_.is_result[static_cast<size_t>(t.result)]) return false;
    const auto& users = facts_.users[static_cast<size_t>(t.result)];
    if (users.empty()) return false;
    for (int i = index + 1; i < static_cast<int>(function_.nodes.size()); ++i) {
      const ir::Node& next = node(i);
      if (is_source_node(next) || is_view_node(next) || (swaps_last_two(next) && i != index)) continue;
      if (next.op != OpKind::kMatmul) return false;
      return std::all_of(users.begin(), users.end(), [&](int user) { return user == i; });
    }
    return false;
  }

  RegionKind kind_for(const ir::Node& n) const {
    switch (ir::op_info(n.op).op_class) {
      case OpClass::kGather: return RegionKind::kGather;
      case OpClass::kMatmul: return RegionKind::kMatmul;
      case OpClass::kAttention: return RegionKind::kAttention;
      case OpClass::kLayout: return RegionKind::kCopy;
      case OpClass::kCollective: return RegionKind::kCollective;
      default: return RegionKind::kFusion;
    }
  }

  // The norm prologue rule: the current region is one RMSNorm of a single static token (between
  // float casts, when the graph normalizes in f32), and every reader of its result is a linear that
  // reads it directly and joins the matmul region `index` starts (consecutive, with only weights and
  // views between them). The norm is then computed inside the matmul's kernel, from the row it stages
  // anyway, and its result never reaches memory.
  bool takes_norm_prologue(int index) const {
    if (!options_.norm_prologue || !current_ || current_->kind != RegionKind::kFusion) return false;
    // A chain: each node reads the one before it, exactly one rmsnorm, float casts around it. It may
    // open with the residual add whose sum the norm reads (h = x + skip of a 16-bit row: a
    // tensor-parallel rank's all-reduced row, which no GEMV epilogue could add); h may be read
    // after the region too (the next residual add): the kernel writes it.
    int norms = 0;
    for (size_t i = 0; i < current_->nodes.size(); ++i) {
      const ir::Node& n = node(current_->nodes[i]);
      const bool opening_add = i == 0 && n.op == OpKind::kAdd && options_.residual_norm_prologue && opens_add_norm(n);
      if (n.op == OpKind::kRmsNorm) ++norms;
      else if (!is_float_cast(n) && !opening_add) return false;
      if (i > 0 && n.operands[0] != node(current_->nodes[i - 1]).result) return false;
      if (i + 1 < current_->nodes.size() && !opening_add &&
          (facts_.users[static_cast<size_t>(n.result)].size() != 1 || facts_.is_result[static_cast<size_t>(n.result)]))
        return false;
    }
    if (norms != 1) return false;
    const ir::Node& last = node(current_->nodes.back());
    const auto& shape = function_.type(last.result).shape;
    if (shape.size() != 2 || !shape[0].is_static() || shape[0].value != 1) return false;
    const auto& users = facts_.users[static_cast<size_t>(last.result)];
    if (users.empty() || facts_.is_result[static_cast<size_t>(last.result)]) return false;
    size_t joined = 0;
    for (int i = index; i < static_cast<int>(function_.nodes.size()) && joined < users.size(); ++i) {
      const ir::Node& next = node(i);
      if (is_source_node(next) || is_view_node(next)) continue;
      if (next.op != OpKind::kLinear || next.operands[0] != last.result) break;
      ++joined;
    }
    return joined == users.size();
  }

  // An add that may open a norm prologue: both operands and the sum of one type, a static single row
  // of a 16-bit float (what the GEMV families stage).
  bool opens_add_norm(const ir::Node& add) const {
    const ir::TensorType& h = function_.type(add.result);
    if (h.shape.size() != 2 || !h.shape[0].is_static() || h.shape[0].value != 1 || !ir::is_float(h.dtype) || ir::dtype_size(h.dtype) != 2)
      return false;
    return function_.type(add.operands[0]) == h && function_.type(add.operands[1]) == h;
  }

  // The residual-norm prologue rule, tried once the current region takes a norm prologue: the region
  // before it is a post-norm and its residual add of one token of a 16-bit float dtype (float casts
  // and one RMSNorm, each reading the one before and read only by the next, then an add of that
  // normalized row and a residual of the add's own shape from outside), and the prologue reads the
  // sum h. The GEMV and cuBLAS families compute the pair (one weight dtype for both norms); f32
  // activations (no GEMV) keep the regions apart.
  bool takes_residual_norm() const {
    if (!options_.residual_norm_prologue || current_->index == 0) return false;
    const Region& prev = partition_.regions[static_cast<size_t>(current_->index - 1)];
    if (prev.kind != RegionKind::kFusion || prev.has_side_effect || prev.nodes.size() < 2) return false;
    const ir::Node& add = node(prev.nodes.back());
    if (add.op != OpKind::kAdd) return false;
    const ir::Node* norm = nullptr;
    for (size_t i = 0; i + 1 < prev.nodes.size(); ++i) {
      const ir::Node& n = node(prev.nodes[i]);
      if (n.op == OpKind::kRmsNorm && !norm) norm = &n;
      else if (!is_float_cast(n)) return false;
      if (i > 0 && n.operands[0] != node(prev.nodes[i - 1]).result) return false;
      if (facts_.users[static_cast<size_t>(n.result)].size() != 1 || facts_.is_result[static_cast<size_t>(n.result)]) return false;
    }
    if (!norm) return false;
    const ir::ValueId normalized = node(prev.nodes[prev.nodes.size() - 2]).result;
    const int mine = add.operands[0] == normalized ? 0 : add.operands[1] == normalized ? 1 : -1;
    if (mine < 0) return false;
    const ir::ValueId residual = add.operands[static_cast<size_t>(1 - mine)];
    const int residual_producer = function_.value(residual).producer;
    if (residual == normalized || (residual_producer >= 0 && partition_.region_of_node[static_cast<size_t>(residual_producer)] == prev.index))
      return false;
    const ir::TensorType& h = function_.type(add.result);
    const ir::Node& pre_first = node(current_->nodes.front());
    const ir::Node* pre_norm = nullptr;
    for (int member : current_->nodes)
      if (node(member).op == OpKind::kRmsNorm) pre_norm = &node(member);
    const ir::DType post_w = function_.type(norm->operands[1]).dtype;
    return pre_first.operands[0] == add.result && pre_norm && ir::is_float(h.dtype) && ir::dtype_size(h.dtype) == 2 &&
           function_.type(residual) == h && function_.type(node(prev.nodes.front()).operands[0]) == h &&
           function_.type(pre_norm->operands[1]).dtype == post_w;
  }

  // Moves the current region's nodes to the end of the region before it, which becomes current.
  void merge_into_previous() {
    Region& prev = partition_.regions[static_cast<size_t>(current_->index - 1)];
    for (int member : current_->nodes) {
      prev.nodes.push_back(member);
      partition_.region_of_node[static_cast<size_t>(member)] = prev.index;
    }
    partition_.regions.pop_back();
    current_ = &partition_.regions.back();
  }

  // The value a node defines is read only by nodes of the current region or by node `reader`.
  bool read_only_inside_or_by(ir::ValueId value, int reader) const {
    if (facts_.is_result[static_cast<size_t>(value)]) return false;
    for (int user : facts_.users[static_cast<size_t>(value)]) {
      const ir::Node& u = node(user);
      if (is_view_node(u)) {
        if (!read_only_inside_or_by(u.result, reader)) return false;
      } else if (user != reader && partition_.region_of_node[static_cast<size_t>(user)] != current_->index) {
        return false;
      }
    }
    return true;
  }

  // The attention prologue rule: the current region is the QK-norm / RoPE / KV-append of one static
  // token (rmsnorm, rope, kv_append and float cast nodes only, at least one append), the attention `index` reads
  // its query from that region and its keys and values as the caches the region appended to, and
  // nothing else reads what the region computed. The attention's kernel then does the prologue
  // itself: it writes the new cache row and uses it from registers.
  bool takes_attention_prologue(int index) const {
    if (!options_.attention_prologue || !current_ || current_->kind != RegionKind::kFusion || !current_->has_side_effect) return false;
    const ir::Node& attention = node(index);
    if (attention.operands.size() < 3) return false;
    const auto& q_shape = function_.type(attention.operands[0]).shape;
    if (q_shape.empty() || !q_shape[0].is_static() || q_shape[0].value != 1) return false;
    for (int member : current_->nodes) {
      const OpKind op = node(member).op;
      if (op != OpKind::kRmsNorm && op != OpKind::kRope && op != OpKind::kKvAppend && !is_float_cast(node(member))) return false;
      if (!read_only_inside_or_by(node(member).result, index)) return false;
    }
    if (!defined_in_current(attention.operands[0])) return false;
    for (int kv = 1; kv <= 2; ++kv) {
      const ir::ValueId cache = through_views(function_, attention.operands[static_cast<size_t>(kv)], nullptr);
      const int producer = function_.value(cache).producer;
      if (producer < 0 || node(producer).op != OpKind::kKvAppend || !defined_in_current(cache)) return false;
    }
    return true;
  }

  void place(int index) {
    const ir::Node& n = node(index);
    if (is_source_node(n) || is_view_node(n)) return;  // attached to consumers below
    if (!joins_current(index)) {
      if (n.op == OpKind::kAttention && takes_attention_prologue(index)) {
        current_->kind = RegionKind::kAttention;  // the prologue's fusion region becomes the attention region
      } else if (n.op == OpKind::kLinear && takes_norm_prologue(index)) {
        if (takes_residual_norm()) merge_into_previous();  // the post-norm and residual add come along
        current_->kind = RegionKind::kMatmul;  // the norm's fusion region becomes the matmul region
      } else {
        partition_.regions.push_back(Region{});
        current_ = &partition_.regions.back();
        current_->index = static_cast<int>(partition_.regions.size()) - 1;
        current_->kind = feeds_next_matmul(index) ? RegionKind::kMatmul : kind_for(n);
        operand_transposes_only_ = n.op == OpKind::kTranspose;
        row_ops_.clear();
        after_row_op_.clear();
        space_ = iteration_shape(n);
        after_reduction_.clear();
      }
      matmul_has_epilogue_ = false;
      if (current_->kind == RegionKind::kMatmul && n.op != OpKind::kTranspose) {
        matmul_input_ = matmul_input(n);
        matmul_shape_ = function_.type(n.result).shape;
      }
    } else if (current_->kind == RegionKind::kMatmul && operand_transposes_only_) {
      if (n.op == OpKind::kMatmul) {
        operand_transposes_only_ = false;
        matmul_input_ = matmul_input(n);
        matmul_shape_ = function_.type(n.result).shape;
      }
    } else if (current_->kind == RegionKind::kMatmul && ir::op_info(n.op).op_class != OpClass::kMatmul) {
      matmul_has_epilogue_ = true;
    }
    current_->nodes.push_back(index);
    partition_.region_of_node[static_cast<size_t>(index)] = current_->index;
    if (ir::has_side_effect(n.op)) {
      current_->has_side_effect = true;
      current_->states.push_back(n.string_attr("state"));
    }
    if (current_->kind == RegionKind::kFusion) {
      // The space grows with a node that broadcasts the region's values into more elements.
      if (ir::static_elements(iteration_shape(n)) > ir::static_elements(space_)) space_ = iteration_shape(n);
      if (is_row_op(n.op)) row_ops_.push_back(n.op);
      if (is_row_op(n.op) || reads_after_row_op(n, false)) after_row_op_.insert(n.result);
      if (ir::op_info(n.op).op_class == OpClass::kReduction || reads_after_row_op(n, true)) after_reduction_.insert(n.result);
    }
    // Attention and gathers take nothing after them; copies and index_copy are single nodes.
    if ((current_->kind != RegionKind::kMatmul && current_->kind != RegionKind::kFusion) || n.op == OpKind::kIndexCopy) current_ = nullptr;
  }

  // Fills interfaces: params, inputs, outputs and view metadata.
  void finish() {
    const UseDef& facts = facts_;
    for (Region& region : partition_.regions) {
      auto add_unique = [](auto& list, const auto& item) {
        if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
      };
      for (int index : region.nodes) {
        for (ir::ValueId operand : node(index).operands) {
          std::vector<int> views;
          const ir::ValueId root = through_views(function_, operand, &views);
          for (int view : views) add_unique(region.view_nodes, view);
          const int producer = function_.value(root).producer;
          if (producer >= 0 && node(producer).op == OpKind::kWeight) {
            add_unique(region.params, node(producer).string_attr("name"));
          } else if (producer >= 0 && is_source_node(node(producer))) {
            continue;  // a constant or arange: computed where it is read
          } else if (producer < 0 || partition_.region_of_node[static_cast<size_t>(producer)] != region.index) {
            add_unique(region.inputs, bound_value(function_, operand));
          }
        }
      }
      for (int index : region.nodes) {
        const ir::ValueId result = node(index).result;
        if (facts.is_result[static_cast<size_t>(result)] || used_outside(facts, result, region.index))
          region.outputs.push_back(result);
      }
      std::sort(region.view_nodes.begin(), region.view_nodes.end());
    }
  }

  // A value is used outside when a compute user in another region reads it, possibly through views.
  bool used_outside(const UseDef& facts, ir::ValueId value, int region_index) const {
    for (int user : facts.users[static_cast<size_t>(value)]) {
      const ir::Node& n = node(user);
      if (is_view_node(n)) {
        if (facts.is_result[static_cast<size_t>(n.result)] || used_outside(facts, n.result, region_index)) return true;
      } else if (partition_.region_of_node[static_cast<size_t>(user)] != region_index) {
        return true;
      }
    }
    return false;
  }

  const ir::Function& function_;
  const RegionOptions options_;
  const UseDef facts_;
  RegionPartition partition_;
  Region* current_ = nullptr;
  ir::ValueId matmul_input_ = ir::kNoValue;
  ir::Shape matmul_shape_;  // the first matmul's result: epilogues keep it
  bool matmul_has_epilogue_ = false;
  bool operand_transposes_only_ = false;  // a matmul region that holds only its operands' transposes yet
  // The current fusion region's row ops, and its values downstream of them (of its reductions).
  std::vector<OpKind> row_ops_;
  ir::Shape space_;  // the current fusion region's iteration space (its largest iteration shape)
  std::set<ir::ValueId> after_row_op_, after_reduction_;
};

}  // namespace

RegionPartition form_regions(const ir::Module&, const ir::Function& function, const RegionOptions& options) {
  return Segmenter(function, options).run();
}

}  // namespace agentcompile::analysis
