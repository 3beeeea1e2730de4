// The IR: a module of parameters, KV-cache states and functions; a function is a typed SSA graph.
//
// Every value is defined exactly once, either as a function argument or as the single result of a
// node; nodes are kept in a valid execution order, and side-effecting nodes (kv_append) keep their
// relative order under every transformation. Values are referred to by index into Function::values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "agentcompile/status.h"
#include "ir/ops.h"
#include "ir/shape.h"

namespace agentcompile::ir {

// Attribute values: integers, floats, strings, dimension lists (shapes, permutations) and float lists
// (a constant's elements, a RoPE inverse-frequency table).
using FloatList = std::vector<double>;
using AttrValue = std::variant<int64_t, double, std::string, std::vector<Dim>, FloatList>;
using Attrs = std::map<std::string, AttrValue>;

std::string attr_to_string(const AttrValue& value);

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

struct Value {
  std::string name;   // printed as %name
  TensorType type;
  int32_t producer = -1;  // index of the defining node, or -1 for a function argument
};

struct Node {
  OpKind op = OpKind::kAdd;
  std::vector<ValueId> operands;
  Attrs attrs;
  ValueId result = kNoValue;
  // Where the node came from ("modeling_qwen3.py:85 in forward" for a captured graph; empty for built
  // ones): named in errors, never part of a region's signature.
  std::string loc;

  int64_t int_attr(const std::string& key, int64_t fallback = 0) const;
  double float_attr(const std::string& key, double fallback = 0.0) const;
  std::string string_attr(const std::string& key, const std::string& fallback = "") const;
  std::vector<Dim> dims_attr(const std::string& key) const;
  FloatList floats_attr(const std::string& key) const;
  bool has_attr(const std::string& key) const { return attrs.count(key) > 0; }
};

struct Function {
  std::string name;
  std::vector<ValueId> args;
  std::vector<Node> nodes;
  std::vector<ValueId> results;
  std::vector<Value> values;

  const Value& value(ValueId id) const { return values.at(static_cast<size_t>(id)); }
  const TensorType& type(ValueId id) const { return value(id).type; }
};

struct ParamDecl {
  std::string name;  // Hugging Face tensor name, e.g. model.layers.0.self_attn.q_proj.weight
  TensorType type;   // always static
  // An alias names rows [alias_row, alias_row + type.shape[0]) of another parameter's leading axis
  // (a part of a fused QKV or gate/up weight): no tensor of its own, the same bytes at an offset.
  std::string alias_of = {};
  int64_t alias_row = 0;
  // A rank's part of a checkpoint tensor (a module sharded for tensor parallelism, src/shard): the
  // tensor stored under `name` has `shard_of` entries along `shard_axis` (its other dims are this
  // type's), and this parameter is the listed ranges of that axis joined in order. Empty: the whole
  // tensor. Several ranges make a fused tensor's rank part (its q, k and v rows of a rank).
  struct Range {
    int64_t start = 0, length = 0;
    bool operator==(const Range&) const = default;
  };
  std::vector<Range> shard_ranges = {};
  int64_t shard_axis = 0;
  int64_t shard_of = 0;
  // The checkpoint tensor whose values this parameter holds, where that is not `name`: a copy of another
  // tensor in a format of its own (a tied LM head quantized apart from the embedding table it shares,
  // frontend/weight_formats.h). Loaders read `values_of` and store it in this type; empty: `name`.
  std::string values_of = {};
  bool is_alias() const { return !alias_of.empty(); }
  bool is_shard() const { return !shard_ranges.empty(); }
  bool is_copy() const { return !values_of.empty(); }
  // The checkpoint tensor a loader reads for this parameter.
  const std::string& checkpoint_name() const { return values_of.empty() ? name : values_of; }
  // The checkpoint tensor's shape: this type's, with the sharded axis whole.
  Shape source_shape() const;
};

struct StateDecl {
  std::string name;  // e.g. kv.0.k
  TensorType type;   // [L, KV, D]: L rows are allocated by whoever runs the module
};

struct Module {
  std::string name;
  std::vector<ParamDecl> params;
  std::vector<StateDecl> states;
  std::vector<Function> functions;

  const ParamDecl* find_param(const std::string& name) const;
  const StateDecl* find_state(const std::string& name) const;
  const Function* find_function(const std::string& name) const;
};

bool operator==(const Node& a, const Node& b);
bool operator==(const Value& a, const Value& b);
bool operator==(const Function& a, const Function& b);
bool operator==(const ParamDecl& a, const ParamDecl& b);
bool operator==(const StateDecl& a, const StateDecl& b);
bool operator==(const Module& a, const Module& b);

// Infers the result type of `node` from its operands and attributes. The builder uses it to type new
// nodes; the verifier uses it to check declared types. Errors name the op and what disagrees.
Expected<TensorType> infer_result_type(const Module& module, const Function& function, const Node& node);

// Builds one function of a module, typing each node by inference as it is added.
class FunctionBuilder {
 public:
  FunctionBuilder(Module& module, std::string function_name);

  ValueId arg(const std::string& name, TensorType type);
  // Adds a node; on an inference error the builder records the first error and returns kNoValue,
  // so graph builders can chain calls and check status() once at the end.
  ValueId op(OpKind kind, std::vector<ValueId> operands, Attrs attrs = {});
  ValueId weight(const std::string& param_name);
  void result(ValueId value);

  const TensorType& type(ValueId id) const { return function_.type(id); }
  const Status& status() const { return status_; }
  // Appends the finished function to the module (only when status() is ok).
  Status finish();

 private:
  Module& module_;
  Function function_;
  Status status_;
};

}  // namespace agentcompile::ir
