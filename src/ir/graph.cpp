// IR containers, attribute access, structural equality and the function builder.
#include "ir/graph.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace agentcompile::ir {

std::string attr_to_string(const AttrValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return std::to_string(*integer);
  if (const auto* real = std::get_if<double>(&value)) {
    // Shortest text that parses back to the same double, always marked as a float.
    char buffer[64];
    for (int precision = 6; precision <= 17; ++precision) {
      std::snprintf(buffer, sizeof(buffer), "%.*g", precision, *real);
      if (std::strtod(buffer, nullptr) == *real) break;
    }
    std::string text = buffer;
    if (std::isfinite(*real) && text.find_first_of(".eE") == std::string::npos) text += ".0";
    return text;
  }
  if (const auto* text = std::get_if<std::string>(&value)) {
    // Control characters are escaped so a string never breaks the one-node-per-line text form.
    std::string quoted = "\"";
    for (char c : *text) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        quoted += '\\';
        quoted += c;
      } else if (c == '\n') {
        quoted += "\\n";
      } else if (c == '\t') {
        quoted += "\\t";
      } else if (c == '\r') {
        quoted += "\\r";
      } else if (byte < 0x20 || byte == 0x7f) {
        const char* hex = "0123456789abcdef";
        quoted += "\\x";
        quoted += hex[byte >> 4];
        quoted += hex[byte & 15];
      } else {
        quoted += c;
      }
    }
    return quoted + "\"";
  }
  if (const auto* floats = std::get_if<FloatList>(&value)) {
    // Each element as a float (so the list never reads back as dims), comma separated.
    std::string text = "[";
    for (size_t i = 0; i < floats->size(); ++i) {
      if (i) text += ", ";
      text += attr_to_string(AttrValue{(*floats)[i]});
    }
    return text + "]";
  }
  return shape_to_string(std::get<std::vector<Dim>>(value));
}

int64_t Node::int_attr(const std::string& key, int64_t fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* integer = std::get_if<int64_t>(&it->second)) return *integer;
  // Converting a double outside int64's range (or nan) is undefined behaviour; such a value is no integer.
  if (const auto* real = std::get_if<double>(&it->second))
    return *real >= -9.2e18 && *real <= 9.2e18 ? static_cast<int64_t>(*real) : fallback;
  return fallback;
}

double Node::float_attr(const std::string& key, double fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* real = std::get_if<double>(&it->second)) return *real;
  if (const auto* integer = std::get_if<int64_t>(&it->second)) return static_cast<double>(*integer);
  return fallback;
}

std::string Node::string_attr(const std::string& key, const std::string& fallback) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  if (const auto* text = std::get_if<std::string>(&it->second)) return *text;
  return fallback;
}

std::vector<Dim> Node::dims_attr(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return {};
  if (const auto* dims = std::get_if<std::vector<Dim>>(&it->second)) return *dims;
  return {};
}

FloatList Node::floats_attr(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return {};
  if (const auto* floats = std::get_if<FloatList>(&it->second)) return *floats;
  return {};
}

const ParamDecl* Module::find_param(const std::string& param_name) const {
  for (const auto& param : params)
    if (param.name == param_name) return &param;
  return nullptr;
}

const StateDecl* Module::find_state(const std::string& state_name) const {
  for (const auto& state : states)
    if (state.name == state_name) return &state;
  return nullptr;
}

const Function* Module::find_function(const std::string& function_name) const {
  for (const auto& function : functions)
    if (function.name == function_name) return &function;
  return nullptr;
}

namespace {

// Floats compare by their bits (so -0.0 and 0.0 differ), and a NaN equals a NaN of the same sign: the text
// form keeps only the sign of a NaN, and parse(print(m)) == m must hold for a NaN constant too.
bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<double>(&a)) return same_double(*x, std::get<double>(b));
  if (const auto* x = std::get_if<FloatList>(&a)) {
    const FloatList& y = std::get<FloatList>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i)
      if (!same_double((*x)[i], y[i])) return false;
    return true;
  }
  return a == b;
}

bool same_attrs(const Attrs& a, const Attrs& b) {
  if (a.size() != b.size()) return false;
  for (auto i = a.begin(), j = b.begin(); i != a.end(); ++i, ++j)
    if (i->first != j->first || !same_attr(i->second, j->second)) return false;
  return true;
}

}  // namespace

bool operator==(const Node& a, const Node& b) {
  return a.op == b.op && a.operands == b.operands && same_attrs(a.attrs, b.attrs) && a.result == b.result && a.loc == b.loc;
}
bool operator==(const Value& a, const Value& b) {
  return a.name == b.name && a.type == b.type && a.producer == b.producer;
}
bool operator==(const Function& a, const Function& b) {
  return a.name == b.name && a.args == b.args && a.nodes == b.nodes && a.results == b.results &&
         a.values == b.values;
}
bool operator==(const ParamDecl& a, const ParamDecl& b) {
  return a.name == b.name && a.type == b.type && a.alias_of == b.alias_of && a.alias_row == b.alias_row &&
         a.shard_ranges == b.shard_ranges && a.shard_axis == b.shard_axis && a.shard_of == b.shard_of && a.values_of == b.values_of;
}

Shape ParamDecl::source_shape() const {
  Shape shape = type.shape;
  if (is_shard() && shard_axis >= 0 && static_cast<size_t>(shard_axis) < shape.size())
    shape[static_cast<size_t>(shard_axis)] = Dim::of(shard_of);
  return shape;
}
bool operator==(const StateDecl& a, const StateDecl& b) { return a.name == b.name && a.type == b.type; }
bool operator==(const Module& a, const Module& b) {
  return a.name == b.name && a.params == b.params && a.states == b.states && a.functions == b.functions;
}

FunctionBuilder::FunctionBuilder(Module& module, std::string function_name) : module_(module) {
  function_.name = std::move(function_name);
}

ValueId FunctionBuilder::arg(const std::string& name, TensorType type) {
  const auto id = static_cast<ValueId>(function_.values.size());
  function_.values.push_back(Value{name, std::move(type), -1});
  function_.args.push_back(id);
  return id;
}

ValueId FunctionBuilder::op(OpKind kind, std::vector<ValueId> operands, Attrs attrs) {
  if (!status_.is_ok()) return kNoValue;
  for (ValueId operand : operands) {
    if (operand < 0 || operand >= static_cast<ValueId>(function_.values.size())) {
      status_ = error(ErrorCode::kInternal,
                      std::string(op_name(kind)) + " in " + function_.name + " uses an undefined value");
      return kNoValue;
    }
  }
  Node node;
  node.op = kind;
  node.operands = std::move(operands);
  node.attrs = std::move(attrs);
  auto type = infer_result_type(module_, function_, node);
  if (!type) {
    status_ = type.status().with_context("building " + function_.name);
    return kNoValue;
  }
  const auto id = static_cast<ValueId>(function_.values.size());
  node.result = id;
  function_.values.push_back(
      Value{std::to_string(function_.nodes.size()), *type, static_cast<int32_t>(function_.nodes.size())});
  function_.nodes.push_back(std::move(node));
  return id;
}

ValueId FunctionBuilder::weight(const std::string& param_name) {
  return op(OpKind::kWeight, {}, {{"name", param_name}});
}

void FunctionBuilder::result(ValueId value) {
  if (value == kNoValue && status_.is_ok())
    status_ = error(ErrorCode::kInternal, function_.name + " returns an undefined value");
  function_.results.push_back(value);
}

Status FunctionBuilder::finish() {
  if (!status_.is_ok()) return status_;
  if (module_.find_function(function_.name))
    return error(ErrorCode::kInternal, "module already has a function named " + function_.name);
  module_.functions.push_back(std::move(function_));
  return Status::ok();
}

}  // namespace agentcompile::ir
