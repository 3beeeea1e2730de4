// The IR printer: Module -> text, in the form ir/parser.cpp reads back (see ir/text.h).
//
// One declaration or node per line. Names that are plain identifiers ([A-Za-z0-9_.]) print bare after
// their sigil (%tokens, @model.norm.weight); any other name prints as a quoted string (%"a b") so every
// module prints to text that parses back. The printer never fails: a malformed module (a dangling
// value id) prints with a marker the parser rejects, which is what a debugging dump needs.
#include <string>

#include "ir/text.h"

namespace agentcompile::ir {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

bool is_plain_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!is_name_char(c)) return false;
  return true;
}

// A bare word must also not start like a number, or the lexer would read it as one.
bool is_plain_word(const std::string& word) {
  return is_plain_name(word) && !(word[0] >= '0' && word[0] <= '9') && word[0] != '.';
}

std::string quoted(const std::string& text) { return attr_to_string(AttrValue{text}); }

std::string sigil_name(char sigil, const std::string& name) {
  return std::string(1, sigil) + (is_plain_name(name) ? name : quoted(name));
}

bool valid_id(const Function& function, ValueId id) {
  return id >= 0 && static_cast<size_t>(id) < function.values.size();
}

std::string value_ref(const Function& function, ValueId id) {
  if (!valid_id(function, id)) return "%<undefined value " + std::to_string(id) + ">";
  return sigil_name('%', function.values[static_cast<size_t>(id)].name);
}

std::string value_type(const Function& function, ValueId id) {
  if (!valid_id(function, id)) return "<no type>";
  return function.values[static_cast<size_t>(id)].type.to_string();
}

std::string print_attrs(const Attrs& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs) {
    if (!first) out += ", ";
    first = false;
    out += is_plain_word(key) ? key : quoted(key);
    out += " = ";
    out += attr_to_string(value);
  }
  return out + "}";
}

void print_node(const Function& function, const Node& node, const std::string& indent, std::string& out) {
  out += indent + value_ref(function, node.result) + " = " + std::string(op_name(node.op));
  if (!node.operands.empty()) {
    out += "(";
    for (size_t i = 0; i < node.operands.size(); ++i) {
      if (i) out += ", ";
      out += value_ref(function, node.operands[i]);
    }
    out += ")";
  }
  if (!node.attrs.empty()) out += " " + print_attrs(node.attrs);
  out += " : " + value_type(function, node.result);
  if (!node.loc.empty()) out += " loc " + quoted(node.loc);
  out += "\n";
}

void print_function_into(const Function& function, const std::string& indent, std::string& out) {
  out += indent + "func " + sigil_name('@', function.name) + "(";
  for (size_t i = 0; i < function.args.size(); ++i) {
    if (i) out += ", ";
    out += value_ref(function, function.args[i]) + ": " + value_type(function, function.args[i]);
  }
  out += ") -> (";
  for (size_t i = 0; i < function.results.size(); ++i) {
    if (i) out += ", ";
    out += value_type(function, function.results[i]);
  }
  out += ") {\n";
  const std::string body = indent + "  ";
  for (const Node& node : function.nodes) print_node(function, node, body, out);
  out += body + "return";
  for (size_t i = 0; i < function.results.size(); ++i) out += (i ? ", " : " ") + value_ref(function, function.results[i]);
  out += "\n" + indent + "}\n";
}

}  // namespace

std::string print_function(const Function& function) {
  std::string out;
  print_function_into(function, "", out);
  return out;
}

std::string print_module(const Module& module) {
  std::string out = "module " + (is_plain_word(module.name) ? module.name : quoted(module.name)) + " {\n";
  for (const ParamDecl& param : module.params) {
    out += "  param " + sigil_name('@', param.name) + " : " + param.type.to_string();
    if (param.is_alias()) out += " alias " + sigil_name('@', param.alias_of) + " row " + std::to_string(param.alias_row);
    if (param.is_copy()) out += " values " + sigil_name('@', param.values_of);
    if (param.is_shard()) {
      out += " shard axis " + std::to_string(param.shard_axis) + " of " + std::to_string(param.shard_of);
      for (const ParamDecl::Range& range : param.shard_ranges)
        out += " [" + std::to_string(range.start) + ", " + std::to_string(range.length) + "]";
    }
    out += "\n";
  }
  for (const StateDecl& state : module.states)
    out += "  state " + sigil_name('@', state.name) + " : " + state.type.to_string() + "\n";
  for (const Function& function : module.functions) print_function_into(function, "  ", out);
  return out + "}\n";
}

}  // namespace agentcompile::ir
