// Internal to the reference interpreter: runtime tensors and the execution of one IR node.
//
// interpreter.cpp owns the call (argument checks, symbol bindings, liveness, weights, states);
// interpreter_exec.cpp turns one node and its operand tensors into its result tensor, handing the
// pointwise ops to interpreter_pointwise.cpp and the data-movement ops to interpreter_layout.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "agentcompile/status.h"
#include "ir/collective.h"
#include "ir/graph.h"
#include "ir/interpreter_ops.h"
#include "ir/thread_pool.h"

namespace agentcompile::ir::exec {

// i32 and bool values live in int32 storage (a bool as 0 or 1); every float dtype lives in f32.
inline bool int_storage(DType dtype) { return dtype == DType::kI32 || dtype == DType::kBool; }

// A runtime value. Storage is shared, so view/reshape, same-storage casts, weights and the results
// of kv_append/index_copy never copy; tensors are treated as immutable once produced, except the
// state buffers that kv_append and index_copy write.
struct Tensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::shared_ptr<std::vector<float>> f32;
  std::shared_ptr<std::vector<int32_t>> i32;

  bool defined() const { return f32 || i32; }
  bool is_int() const { return int_storage(dtype); }
  int64_t elements() const;
  const float* f() const { return f32->data(); }
  const int32_t* i() const { return i32->data(); }
  // The storage as T (float or int32_t, matching is_int()).
  template <typename T>
  const T* data() const {
    if constexpr (std::is_same_v<T, float>) return f32->data();
    else return i32->data();
  }
  template <typename T>
  T* mutable_data() {
    if constexpr (std::is_same_v<T, float>) return f32->data();
    else return i32->data();
  }
};

// A fresh zeroed tensor of `dtype`, or kResourceExhausted (naming the type and its bytes) when the
// host cannot hold it beside the `held` bytes the interpreter already keeps (support/host_limits.h).
Expected<Tensor> make_tensor(DType dtype, std::vector<int64_t> shape, uint64_t held = 0);

// Calls fn(T{}) with T the element type of storage of that class: int32_t or float.
template <typename Fn>
decltype(auto) with_storage(bool is_int, Fn&& fn) {
  if (is_int) return fn(int32_t{});
  return fn(float{});
}

// What a node may reach besides its operands.
struct Context {
  ThreadPool* pool = nullptr;
  // The parameter's tensor (loaded once and cached by the caller; an alias's rows are sliced out).
  std::function<Expected<Tensor>(const std::string& name)> weight;
  // The state's tensor [max_context, KV, D]; its storage is the state itself.
  std::function<Expected<Tensor>(const std::string& name)> state;
  // rope cos/sin tables for one call: every rope node of a layer stack shares a few, so they are
  // computed once per distinct (inv_freq, scale, pos, T).
  std::function<const kernels::RopeTable&(const std::vector<float>& inv_freq, float scale, int64_t pos, int64_t T)>
      rope_table;
  // Bytes of the weights and states the interpreter keeps: a node's result must fit beside them.
  uint64_t held_bytes = 0;
  // The rank's group for all_reduce / all_gather (InterpreterOptions::collective); may be null.
  Collective* collective = nullptr;
};

// Runs `node` on `values` (operands are defined; types were checked against inference when the
// function was planned). Errors give only the reason; the caller names the function and node.
Expected<Tensor> execute_node(Context& context, const Function& function, const Node& node,
                              const std::vector<Tensor>& values, const SymbolBindings& bindings);

// ---- shared by the op groups ----

// A possibly negative axis made non-negative (the type rules checked its range).
int64_t normalize_axis(int64_t axis, size_t rank);

// A tensor viewed as [outer, shape[axis], inner] around `axis`.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis);

// Offsets of a right-aligned, numpy-broadcast input inside out_shape: per out dim, the step in the
// input (0 where the input lacks the dim or has size 1).
std::vector<int64_t> broadcast_steps(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape);

// Every value of `indices` lies in [0, size); otherwise an error "<what> <value> at position <i> is
// out of range for <range>".
Status check_indices(const Tensor& indices, int64_t size, const std::string& what, const std::string& range);

// Runs fn(begin, end) over chunks of [0, count): on the pool of the node being executed when the
// tensor is large (KernelBench inputs reach 2^31 elements), else inline on the caller. Chunks write
// disjoint outputs; fn must not call parallel_elements itself.
// `cost` is the elements one item touches (a row's length for row ops).
void parallel_elements(int64_t count, const std::function<void(int64_t, int64_t)>& fn, int64_t cost = 1);

// Makes `pool` the one parallel_elements uses on this thread while the scope lives (execute_node).
class LoopPoolScope {
 public:
  explicit LoopPoolScope(ThreadPool* pool);
  ~LoopPoolScope();
  LoopPoolScope(const LoopPoolScope&) = delete;
  LoopPoolScope& operator=(const LoopPoolScope&) = delete;

 private:
  ThreadPool* previous_;
};

// The pointwise ops (binary, comparisons, logical, where, unary math, cast between storages) into
// `out`, whose dtype and shape are the node's result type (interpreter_pointwise.cpp).
Expected<Tensor> run_pointwise(const Node& node, const std::vector<const Tensor*>& in, Tensor out);
// The layout and gather ops (transpose, slice, broadcast, concat, flip, embedding, index_select,
// gather) into `out` (interpreter_layout.cpp). Index operands are checked against the data.
Expected<Tensor> run_layout(const Node& node, const std::vector<const Tensor*>& in, Tensor out);

}  // namespace agentcompile::ir::exec
