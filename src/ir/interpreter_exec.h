// Internal to the reference interpreter: runtime tensors and the execution of one IR node.
//
// interpreter.cpp owns the call (argument checks, symbol bindings, liveness, weights, states);
// interpreter_exec.cpp turns one node and its operand tensors into its result tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "ir/interpreter_ops.h"
#include "ir/thread_pool.h"

namespace agentcompile::ir::exec {

// A runtime value: float dtypes hold f32 (whatever the IR dtype), i32 holds int32. Storage is
// shared, so view/reshape, same-class casts, weights and kv_append results never copy; tensors are
// treated as immutable once produced, except the state buffers that kv_append writes.
struct Tensor {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::shared_ptr<std::vector<float>> f32;
  std::shared_ptr<std::vector<int32_t>> i32;

  bool defined() const { return f32 || i32; }
  bool is_int() const { return dtype == DType::kI32; }
  int64_t elements() const;
  const float* f() const { return f32->data(); }
  const int32_t* i() const { return i32->data(); }
};

// A fresh zeroed tensor of `dtype` (float dtypes get f32 storage, i32 gets int32 storage).
Tensor make_tensor(DType dtype, std::vector<int64_t> shape);

// What a node may reach besides its operands.
struct Context {
  ThreadPool* pool = nullptr;
  // The parameter's tensor (loaded once and cached by the caller).
  std::function<Expected<Tensor>(const std::string& name)> weight;
  // The state's tensor [max_context, KV, D]; its storage is the state itself.
  std::function<Expected<Tensor>(const std::string& name)> state;
  // rope cos/sin tables for one call: every rope node of a layer stack shares a few, so they are
  // computed once per distinct (params, D, pos, T).
  std::function<const kernels::RopeTable&(const kernels::RopeParams&, int64_t D, int64_t pos, int64_t T)> rope_table;
};

// Runs `node` on `values` (operands are defined; types were checked against inference when the
// function was planned). Errors give only the reason; the caller names the function and node.
Expected<Tensor> execute_node(Context& context, const Function& function, const Node& node,
                              const std::vector<Tensor>& values, const SymbolBindings& bindings);

}  // namespace agentcompile::ir::exec
