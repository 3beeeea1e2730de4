// The IR parser: text -> Module, the inverse of ir/printer.cpp (see ir/text.h for the form).
//
// A lexer turns the whole text into tokens (words, %values, @globals, numbers, strings, punctuation),
// each with its line and column; a recursive-descent parser with one token of lookahead builds the
// module. Grammar:
//   module := 'module' NAME '{' (param | state | func)* '}'
//   param  := 'param' @NAME ':' type ['alias' @NAME 'row' INT] ['values' @NAME] ['shard' 'axis' INT 'of' INT ('[' INT ',' INT ']')+]
//   state  := 'state' @NAME ':' type
//   func   := 'func' @NAME '(' [%NAME ':' type {',' ...}] ')' '->' '(' [type {',' type}] ')'
//             '{' node* 'return' [%NAME {',' %NAME}] '}'
//   node   := %NAME '=' OP ['(' [%NAME {',' %NAME}] ')'] ['{' [KEY '=' attr {',' ...}] '}'] ':' type
//             ['loc' STRING]
//   type   := DTYPE '[' [dim {',' dim}] ']'      dim := INT | 'T' | 'L'
//   attr   := INT | FLOAT | STRING | '[' [dim {',' dim}] ']' | '[' FLOAT {',' number} ']'
// A list whose first element is a float is a float list (the printer writes every element as a float).
// A number is a float when it has '.', 'e'/'E', or is inf/nan; otherwise it is an integer.
// The parser resolves names and records declared types as written; it does not infer types: the
// verifier checks them. Values are stored in definition order (args, then node results), as
// FunctionBuilder stores them, so parse(print(m)) == m. No input makes it throw or read out of range.
#include <charconv>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/text.h"

namespace agentcompile::ir {

namespace {

enum class Tok { kEnd, kWord, kValue, kGlobal, kNumber, kString, kPunct };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // word, number as written, decoded string/name, or the punctuation ("->" for the arrow)
  int line = 1;
  int col = 1;
};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string describe(const Token& token) {
  switch (token.kind) {
    case Tok::kEnd: return "end of input";
    case Tok::kWord: return "'" + token.text + "'";
    case Tok::kValue: return "%" + token.text;
    case Tok::kGlobal: return "@" + token.text;
    case Tok::kNumber: return "number " + token.text;
    case Tok::kString: return "a string";
    case Tok::kPunct: return "'" + token.text + "'";
  }
  return "a token";
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Expected<std::vector<Token>> run() {
    std::vector<Token> tokens;
    while (true) {
      skip_space();
      Token token;
      token.line = line_;
      token.col = col_;
      if (at_end()) {
        tokens.push_back(token);
        return tokens;
      }
      AC_TRY(lex_one(token));
      tokens.push_back(std::move(token));
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  char advance() {
    const char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  Status fail(int line, int col, const std::string& message) const {
    return error(ErrorCode::kParse, source_ + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + message);
  }

  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '/' && peek(1) == '/') {  // comment to the end of the line
        while (!at_end() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }

  Status lex_one(Token& token) {
    const char c = peek();
    if (c == '%' || c == '@') {
      advance();
      token.kind = c == '%' ? Tok::kValue : Tok::kGlobal;
      if (peek() == '"') return lex_string(token);
      while (!at_end() && is_name_char(peek())) token.text += advance();
      if (token.text.empty()) return fail(token.line, token.col, std::string("expected a name after '") + c + "'");
      return Status::ok();
    }
    if (c == '"') {
      token.kind = Tok::kString;
      return lex_string(token);
    }
    if (c == '-' && peek(1) == '>') {
      advance();
      advance();
      token.kind = Tok::kPunct;
      token.text = "->";
      return Status::ok();
    }
    if (c == '-' || is_digit(c)) return lex_number(token);
    if (is_name_char(c)) {
      token.kind = Tok::kWord;
      while (!at_end() && is_name_char(peek())) token.text += advance();
      return Status::ok();
    }
    if (std::string_view("(){}[],:=").find(c) != std::string_view::npos) {
      token.kind = Tok::kPunct;
      token.text = std::string(1, advance());
      return Status::ok();
    }
    const auto byte = static_cast<unsigned char>(c);
    std::string shown = byte >= 0x21 && byte < 0x7f ? std::string(1, c) : "\\x" + hex(byte);
    return fail(token.line, token.col, "unexpected character '" + shown + "'");
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  static std::string hex(unsigned char byte) {
    const char* digits = "0123456789abcdef";
    return {digits[byte >> 4], digits[byte & 15]};
  }

  // -?digits[.digits][(e|E)[+-]digits], or -?inf / -?nan.
  Status lex_number(Token& token) {
    token.kind = Tok::kNumber;
    if (peek() == '-') token.text += advance();
    if (is_digit(peek())) {
      while (is_digit(peek())) token.text += advance();
      if (peek() == '.') {
        token.text += advance();
        while (is_digit(peek())) token.text += advance();
      }
      if (peek() == 'e' || peek() == 'E') {
        token.text += advance();
        if (peek() == '+' || peek() == '-') token.text += advance();
        if (!is_digit(peek())) return fail(line_, col_, "expected digits in the exponent of '" + token.text + "'");
        while (is_digit(peek())) token.text += advance();
      }
    } else if (text_.substr(pos_, 3) == "inf" || text_.substr(pos_, 3) == "nan") {
      for (int i = 0; i < 3; ++i) token.text += advance();
    } else {
      return fail(token.line, token.col, "expected a number after '-'");
    }
    if (is_name_char(peek())) return fail(token.line, token.col, "malformed number '" + token.text + peek() + "'");
    return Status::ok();
  }

  // A quoted string with escapes \" \\ \n \t \r \xHH; it may not span lines.
  Status lex_string(Token& token) {
    const int line = line_;
    const int col = col_;
    advance();  // opening quote
    while (true) {
      if (at_end() || peek() == '\n') return fail(line, col, "unterminated string");
      const char c = advance();
      if (c == '"') return Status::ok();
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return fail(line_, col_ - 1, "control character in string (write it as an escape)");
      if (c != '\\') {
        token.text += c;
        continue;
      }
      const int escape_col = col_ - 1;
      const char e = at_end() ? '\0' : advance();
      if (e == '"' || e == '\\') {
        token.text += e;
      } else if (e == 'n') {
        token.text += '\n';
      } else if (e == 't') {
        token.text += '\t';
      } else if (e == 'r') {
        token.text += '\r';
      } else if (e == 'x' && hex_value(peek()) >= 0 && hex_value(peek(1)) >= 0) {
        const int high = hex_value(advance());
        token.text += static_cast<char>(high * 16 + hex_value(advance()));
      } else {
        return fail(line_, escape_col, "unknown escape in string (use \\\" \\\\ \\n \\t \\r or \\xHH)");
      }
    }
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& source) : tokens_(std::move(tokens)), source_(source) {}

  // 'shard' 'axis' INT 'of' INT, then one or more [start, length] ranges.
  Status parse_shard(ParamDecl& param) {
    next();
    AC_TRY(expect_word("axis"));
    AC_ASSIGN_OR_RETURN(param.shard_axis, expect_int("the sharded axis"));
    AC_TRY(expect_word("of"));
    AC_ASSIGN_OR_RETURN(param.shard_of, expect_int("the sharded axis's whole size"));
    if (!is_punct("[")) return fail(peek(), "expected a [start, length] range of the shard, got " + describe(peek()));
    while (is_punct("[")) {
      next();
      ParamDecl::Range range;
      AC_ASSIGN_OR_RETURN(range.start, expect_int("a range's start"));
      AC_TRY(expect_punct(","));
      AC_ASSIGN_OR_RETURN(range.length, expect_int("a range's length"));
      AC_TRY(expect_punct("]"));
      param.shard_ranges.push_back(range);
    }
    return Status::ok();
  }

  Expected<int64_t> expect_int(const std::string& what) {
    if (peek().kind != Tok::kNumber) return fail(peek(), "expected " + what + ", got " + describe(peek()));
    return parse_int(next());
  }

  Expected<Module> parse() {
    Module module;
    AC_TRY(expect_word("module"));
    if (peek().kind == Tok::kWord || peek().kind == Tok::kString) {
      module.name = next().text;
    } else {
      return fail(peek(), "expected the module name, got " + describe(peek()));
    }
    AC_TRY(expect_punct("{"));
    while (!is_punct("}")) {
      const Token& head = peek();
      if (is_word("param") || is_word("state")) {
        const bool is_param = head.text == "param";
        next();
        AC_ASSIGN_OR_RETURN(std::string name, expect_name(Tok::kGlobal, is_param ? "parameter" : "state"));
        AC_TRY(expect_punct(":"));
        AC_ASSIGN_OR_RETURN(TensorType type, parse_type());
        if (is_param) {
          ParamDecl param{std::move(name), std::move(type)};
          if (is_word("alias")) {
            next();
            AC_ASSIGN_OR_RETURN(param.alias_of, expect_name(Tok::kGlobal, "aliased parameter"));
            AC_TRY(expect_word("row"));
            if (peek().kind != Tok::kNumber) return fail(peek(), "expected the first row of the alias, got " + describe(peek()));
            AC_ASSIGN_OR_RETURN(param.alias_row, parse_int(next()));
          }
          if (is_word("values")) {
            next();
            AC_ASSIGN_OR_RETURN(param.values_of, expect_name(Tok::kGlobal, "checkpoint tensor the parameter holds"));
          }
          if (is_word("shard")) AC_TRY(parse_shard(param));
          module.params.push_back(std::move(param));
        } else {
          module.states.push_back(StateDecl{std::move(name), std::move(type)});
        }
      } else if (is_word("func")) {
        AC_ASSIGN_OR_RETURN(Function function, parse_function());
        module.functions.push_back(std::move(function));
      } else {
        return fail(head, "expected 'param', 'state', 'func' or '}', got " + describe(head));
      }
    }
    next();  // '}'
    if (peek().kind != Tok::kEnd) return fail(peek(), "expected end of input after the module, got " + describe(peek()));
    return module;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;  // the last token is kEnd and stays current
    return token;
  }
  bool is_punct(std::string_view p) const { return peek().kind == Tok::kPunct && peek().text == p; }
  bool is_word(std::string_view w) const { return peek().kind == Tok::kWord && peek().text == w; }

  Status fail(const Token& at, const std::string& message) const {
    return error(ErrorCode::kParse,
                 source_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.col) + ": " + message);
  }
  Status expect_punct(std::string_view p) {
    if (!is_punct(p)) return fail(peek(), "expected '" + std::string(p) + "', got " + describe(peek()));
    next();
    return Status::ok();
  }
  Status expect_word(std::string_view w) {
    if (!is_word(w)) return fail(peek(), "expected '" + std::string(w) + "', got " + describe(peek()));
    next();
    return Status::ok();
  }
  Expected<std::string> expect_name(Tok kind, const std::string& what) {
    if (peek().kind != kind)
      return fail(peek(), "expected " + what + " name (" + (kind == Tok::kValue ? "%" : "@") + "NAME), got " +
                              describe(peek()));
    return next().text;
  }

  Expected<int64_t> parse_int(const Token& token) {
    int64_t value = 0;
    const char* begin = token.text.data();
    const char* end = begin + token.text.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc::result_out_of_range) return fail(token, "integer " + token.text + " is out of range");
    if (ec != std::errc() || ptr != end) return fail(token, "expected an integer, got " + describe(token));
    return value;
  }

  static bool is_float_text(const std::string& text) {
    return text.find_first_of(".eE") != std::string::npos || text.find("inf") != std::string::npos ||
           text.find("nan") != std::string::npos;
  }

  Expected<Dim> parse_dim() {
    const Token& token = peek();
    if (token.kind == Tok::kWord && (token.text == "T" || token.text == "L")) {
      next();
      return token.text == "T" ? Dim::T() : Dim::L();
    }
    if (token.kind == Tok::kNumber && !is_float_text(token.text)) {
      AC_ASSIGN_OR_RETURN(int64_t value, parse_int(next()));
      return Dim::of(value);
    }
    return fail(token, "expected a dimension (an integer, T or L), got " + describe(token));
  }

  Expected<std::vector<Dim>> parse_dims() {
    AC_TRY(expect_punct("["));
    std::vector<Dim> dims;
    if (!is_punct("]")) {
      while (true) {
        AC_ASSIGN_OR_RETURN(Dim dim, parse_dim());
        dims.push_back(dim);
        if (!is_punct(",")) break;
        next();
      }
    }
    AC_TRY(expect_punct("]"));
    return dims;
  }

  Expected<TensorType> parse_type() {
    const Token& token = peek();
    if (token.kind != Tok::kWord) return fail(token, "expected a type such as f16[T, 2048], got " + describe(token));
    auto dtype = parse_dtype(token.text);
    if (!dtype) return fail(token, "unknown dtype '" + token.text + "'");
    next();
    if (!is_punct("[")) return fail(peek(), "expected '[' after dtype " + token.text + ", got " + describe(peek()));
    AC_ASSIGN_OR_RETURN(Shape shape, parse_dims());
    return TensorType{*dtype, std::move(shape)};
  }

  bool at_number() const {
    const Token& token = peek();
    return token.kind == Tok::kNumber || (token.kind == Tok::kWord && (token.text == "inf" || token.text == "nan"));
  }

  // A number token: an integer, or a float when written as one.
  Expected<AttrValue> parse_number() {
    const Token& token = next();
    if (!is_float_text(token.text)) {
      AC_ASSIGN_OR_RETURN(int64_t value, parse_int(token));
      return AttrValue{value};
    }
    double value = 0;
    const char* begin = token.text.data();
    const char* end = begin + token.text.size();
    auto [ptr, ec] = std::from_chars(begin, end, value);
    if (ec == std::errc::result_out_of_range) return fail(token, "float " + token.text + " is out of range");
    if (ec != std::errc() || ptr != end) return fail(token, "malformed float " + token.text);
    return AttrValue{value};
  }

  // '[' FLOAT {',' number} ']' (the '[' already seen and the next token a float).
  Expected<AttrValue> parse_float_list() {
    FloatList values;
    while (true) {
      if (!at_number()) return fail(peek(), "expected a number in the float list, got " + describe(peek()));
      AC_ASSIGN_OR_RETURN(AttrValue value, parse_number());
      if (const auto* integer = std::get_if<int64_t>(&value))
        values.push_back(static_cast<double>(*integer));
      else
        values.push_back(std::get<double>(value));
      if (!is_punct(",")) break;
      next();
    }
    AC_TRY(expect_punct("]"));
    return AttrValue{std::move(values)};
  }

  Expected<AttrValue> parse_attr_value() {
    const Token& token = peek();
    if (token.kind == Tok::kString) return AttrValue{next().text};
    if (token.kind == Tok::kPunct && token.text == "[") {
      if (pos_ + 1 < tokens_.size()) {
        const Token& first = tokens_[pos_ + 1];
        const bool float_first = (first.kind == Tok::kNumber && is_float_text(first.text)) ||
                                 (first.kind == Tok::kWord && (first.text == "inf" || first.text == "nan"));
        if (float_first) {
          next();  // '['
          return parse_float_list();
        }
      }
      AC_ASSIGN_OR_RETURN(std::vector<Dim> dims, parse_dims());
      return AttrValue{std::move(dims)};
    }
    if (at_number()) return parse_number();
    return fail(token, "expected an attribute value (integer, float, string, [dims] or [floats]), got " + describe(token));
  }

  Status parse_attrs(Attrs& attrs) {
    AC_TRY(expect_punct("{"));
    if (!is_punct("}")) {
      while (true) {
        const Token& key = peek();
        if (key.kind != Tok::kWord && key.kind != Tok::kString)
          return fail(key, "expected an attribute name, got " + describe(key));
        next();
        AC_TRY(expect_punct("="));
        AC_ASSIGN_OR_RETURN(AttrValue value, parse_attr_value());
        if (!attrs.emplace(key.text, std::move(value)).second)
          return fail(key, "attribute '" + key.text + "' is given twice");
        if (!is_punct(",")) break;
        next();
      }
    }
    return expect_punct("}");
  }

  // Defines a value named by `token` in the current function; names are unique per function.
  Expected<ValueId> define(Function& function, const Token& token, TensorType type, int32_t producer) {
    auto [it, inserted] = names_.emplace(token.text, static_cast<ValueId>(function.values.size()));
    if (!inserted)
      return fail(token, "value %" + token.text + " is already defined (line " +
                             std::to_string(def_lines_[static_cast<size_t>(it->second)]) + ")");
    function.values.push_back(Value{token.text, std::move(type), producer});
    def_lines_.push_back(token.line);
    return it->second;
  }

  Expected<ValueId> use(const Function& function) {
    const Token& token = peek();
    if (token.kind != Tok::kValue) return fail(token, "expected a value (%NAME), got " + describe(token));
    next();
    auto it = names_.find(token.text);
    if (it == names_.end()) return fail(token, "undefined value %" + token.text + " in @" + function.name);
    return it->second;
  }

  Status parse_node(Function& function) {
    const Token& result = next();  // the caller saw a kValue
    AC_TRY(expect_punct("="));
    const Token& op_token = peek();
    if (op_token.kind != Tok::kWord) return fail(op_token, "expected an op name, got " + describe(op_token));
    auto op = parse_op(op_token.text);
    if (!op) return fail(op_token, "unknown op '" + op_token.text + "'");
    next();
    Node node;
    node.op = *op;
    if (is_punct("(")) {
      next();
      if (!is_punct(")")) {
        while (true) {
          AC_ASSIGN_OR_RETURN(ValueId operand, use(function));
          node.operands.push_back(operand);
          if (!is_punct(",")) break;
          next();
        }
      }
      AC_TRY(expect_punct(")"));
    }
    if (is_punct("{")) AC_TRY(parse_attrs(node.attrs));
    AC_TRY(expect_punct(":"));
    AC_ASSIGN_OR_RETURN(TensorType type, parse_type());
    if (is_word("loc")) {
      next();
      if (peek().kind != Tok::kString) return fail(peek(), "expected the source location as a string after 'loc', got " + describe(peek()));
      node.loc = next().text;
    }
    AC_ASSIGN_OR_RETURN(node.result,
                        define(function, result, std::move(type), static_cast<int32_t>(function.nodes.size())));
    function.nodes.push_back(std::move(node));
    return Status::ok();
  }

  Expected<Function> parse_function() {
    next();  // 'func'
    Function function;
    names_.clear();
    def_lines_.clear();
    AC_ASSIGN_OR_RETURN(function.name, expect_name(Tok::kGlobal, "function"));
    AC_TRY(expect_punct("("));
    if (!is_punct(")")) {
      while (true) {
        const Token& name = peek();
        if (name.kind != Tok::kValue) return fail(name, "expected an argument (%NAME: TYPE), got " + describe(name));
        next();
        AC_TRY(expect_punct(":"));
        AC_ASSIGN_OR_RETURN(TensorType type, parse_type());
        AC_ASSIGN_OR_RETURN(ValueId id, define(function, name, std::move(type), -1));
        function.args.push_back(id);
        if (!is_punct(",")) break;
        next();
      }
    }
    AC_TRY(expect_punct(")"));
    AC_TRY(expect_punct("->"));
    AC_TRY(expect_punct("("));
    std::vector<TensorType> result_types;
    if (!is_punct(")")) {
      while (true) {
        AC_ASSIGN_OR_RETURN(TensorType type, parse_type());
        result_types.push_back(std::move(type));
        if (!is_punct(",")) break;
        next();
      }
    }
    AC_TRY(expect_punct(")"));
    AC_TRY(expect_punct("{"));
    while (peek().kind == Tok::kValue) AC_TRY(parse_node(function));
    if (!is_word("return")) return fail(peek(), "expected a node (%NAME = ...) or 'return', got " + describe(peek()));
    const Token& return_token = next();
    if (peek().kind == Tok::kValue) {
      while (true) {
        const Token& token = peek();
        AC_ASSIGN_OR_RETURN(ValueId id, use(function));
        const size_t index = function.results.size();
        if (index < result_types.size() && function.type(id) != result_types[index])
          return fail(token, "return value %" + token.text + " has type " + function.type(id).to_string() + " but @" +
                                 function.name + " declares " + result_types[index].to_string());
        function.results.push_back(id);
        if (!is_punct(",")) break;
        next();
      }
    }
    if (function.results.size() != result_types.size())
      return fail(return_token, "@" + function.name + " declares " + std::to_string(result_types.size()) +
                                    " results but returns " + std::to_string(function.results.size()));
    AC_TRY(expect_punct("}"));
    return function;
  }

  std::vector<Token> tokens_;
  const std::string& source_;
  size_t pos_ = 0;
  std::unordered_map<std::string, ValueId> names_;  // the current function's values by name
  std::vector<int> def_lines_;                       // line each of its values is defined on
};

}  // namespace

Expected<Module> parse_module(std::string_view text, const std::string& source) {
  AC_ASSIGN_OR_RETURN(std::vector<Token> tokens, Lexer(text, source).run());
  return Parser(std::move(tokens), source).parse();
}

}  // namespace agentcompile::ir
