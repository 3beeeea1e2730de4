// Request bodies: JSON parsing, the known fields of each route, types and ranges (see request.h).
#include "serve/request.h"

#include <limits>
#include <set>

#include <nlohmann/json.hpp>

namespace agentcompile::serve {

namespace {

using json = nlohmann::json;

const std::set<std::string, std::less<>> kCommonFields = {
    "model", "max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "presence_penalty", "frequency_penalty",
    "n", "logprobs", "stream", "stream_options", "user", "logit_bias", "ignore_eos"};
const std::set<std::string, std::less<>> kChatFields = {"messages", "max_completion_tokens", "top_logprobs", "chat_template_kwargs",
                                                        "response_format", "tools", "tool_choice", "parallel_tool_calls"};
const std::set<std::string, std::less<>> kCompletionFields = {"prompt", "echo", "best_of", "suffix"};

std::string type_name(const json& value) {
  if (value.is_boolean()) return "a boolean";
  if (value.is_number_integer() || value.is_number_unsigned()) return "an integer";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  return "null";
}

ApiError wrong_type(const std::string& field, const std::string& expected, const json& got) {
  return invalid_request("Invalid type for '" + field + "': expected " + expected + ", but got " + type_name(got) + " instead.", field,
                         "invalid_type");
}

ApiError out_of_range(const std::string& field, const std::string& range, const std::string& got) {
  return invalid_request("Invalid '" + field + "': expected a value " + range + ", but got " + got + " instead.", field,
                         "invalid_value");
}

ApiError unsupported(const std::string& field, const std::string& why) {
  return invalid_request("Unsupported value for '" + field + "': " + why, field, "unsupported_value");
}

std::string number_text(double value) {
  json j = value;
  return j.dump();
}

// A field, or nullptr when it is absent or null.
const json* field(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::optional<ApiError> read_bool(const json& body, const char* key, bool& out) {
  const json* value = field(body, key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) return wrong_type(key, "a boolean", *value);
  out = value->get<bool>();
  return std::nullopt;
}

// A number in [lo, hi] (or (lo, hi] when lo_open).
std::optional<ApiError> read_number(const json& body, const char* key, double lo, double hi, bool lo_open, float& out) {
  const json* value = field(body, key);
  if (!value) return std::nullopt;
  if (!value->is_number()) return wrong_type(key, "a number", *value);
  const double number = value->get<double>();
  if (number < lo || number > hi || (lo_open && number == lo))
    return out_of_range(key, (lo_open ? "> " : ">= ") + number_text(lo) + " and <= " + number_text(hi), number_text(number));
  out = static_cast<float>(number);
  return std::nullopt;
}

// An integer in [lo, hi]; integers past int64 are taken as its maximum (then refused by range).
std::optional<ApiError> read_integer(const json& body, const char* key, int64_t lo, int64_t hi, std::optional<int64_t>& out) {
  const json* value = field(body, key);
  if (!value) return std::nullopt;
  int64_t number = 0;
  if (value->is_number_unsigned()) {
    const uint64_t u = value->get<uint64_t>();
    number = u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(u);
  } else if (value->is_number_integer()) {
    number = value->get<int64_t>();
  } else {
    return wrong_type(key, "an integer", *value);
  }
  if (number < lo || number > hi)
    return out_of_range(key, ">= " + std::to_string(lo) + " and <= " + std::to_string(hi), value->dump());
  out = number;
  return std::nullopt;
}

std::optional<ApiError> read_messages(const json& body, ParsedRequest& out) {
  const json* messages = field(body, "messages");
  if (!messages) return invalid_request("Missing required parameter: 'messages'.", "messages", "missing_required_parameter");
  if (!messages->is_array()) return wrong_type("messages", "an array", *messages);
  if (messages->empty()) return invalid_request("Invalid 'messages': empty array. Expected an array with at least one message.", "messages", "empty_array");
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const json& message = (*messages)[i];
    if (!message.is_object()) return wrong_type(at, "an object", message);
    for (const auto& [key, value] : message.items())
      if (key != "role" && key != "content") return invalid_request("Unrecognized field '" + at + "." + key + "'.", at + "." + key, "unknown_parameter");
    const json* role = field(message, "role");
    if (!role) return invalid_request("Missing required parameter: '" + at + ".role'.", at + ".role", "missing_required_parameter");
    if (!role->is_string()) return wrong_type(at + ".role", "a string", *role);
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";  // OpenAI's newer name for the system message
    if (name != "system" && name != "user" && name != "assistant")
      return invalid_request("Invalid value for '" + at + ".role': supported roles are system, developer, user and assistant (no tools).", at + ".role",
                             "invalid_value");
    const json* content = field(message, "content");
    if (!content) return invalid_request("Missing required parameter: '" + at + ".content'.", at + ".content", "missing_required_parameter");
    std::string text;
    if (content->is_string()) {
      text = content->get<std::string>();
    } else if (content->is_array()) {
      for (size_t p = 0; p < content->size(); ++p) {
        const std::string part_at = at + ".content[" + std::to_string(p) + "]";
        const json& part = (*content)[p];
        if (!part.is_object()) return wrong_type(part_at, "an object", part);
        const json* type = field(part, "type");
        const json* part_text = field(part, "text");
        if (!type || !type->is_string() || type->get<std::string>() != "text")
          return unsupported(part_at + ".type", "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported.");
        if (!part_text || !part_text->is_string()) return wrong_type(part_at + ".text", "a string", part_text ? *part_text : json());
        text += part_text->get<std::string>();
      }
    } else {
      return wrong_type(at + ".content", "a string or an array of text parts", *content);
    }
    out.messages.push_back(tokenizer::ChatMessage{name, std::move(text)});
  }
  return std::nullopt;
}

// Token ids of a completions prompt: integers in [0, 2^31).
std::optional<ApiError> read_ids(const json& array, const std::string& at, std::vector<int32_t>& ids) {
  for (size_t i = 0; i < array.size(); ++i) {
    const json& id = array[i];
    if (!id.is_number_integer() && !id.is_number_unsigned()) return wrong_type(at + "[" + std::to_string(i) + "]", "an integer token id", id);
    if (id.is_number_unsigned() ? id.get<uint64_t>() > INT32_MAX : (id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX))
      return out_of_range(at + "[" + std::to_string(i) + "]", ">= 0 (a token id)", id.dump());
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> read_prompt(const json& body, ParsedRequest& out) {
  const json* prompt = field(body, "prompt");
  if (!prompt) return invalid_request("Missing required parameter: 'prompt'.", "prompt", "missing_required_parameter");
  const json* one = prompt;
  std::string at = "prompt";
  // A list of prompts asks for one completion each; one is supported.
  if (prompt->is_array() && !prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    if (prompt->size() != 1) return unsupported("prompt", "one prompt per request (got " + std::to_string(prompt->size()) + ").");
    one = &(*prompt)[0];
    at = "prompt[0]";
  }
  if (one->is_string()) {
    out.prompt = one->get<std::string>();
    return std::nullopt;
  }
  if (!one->is_array()) return wrong_type(at, "a string or an array of token ids", *one);
  std::vector<int32_t> ids;
  if (auto e = read_ids(*one, at, ids)) return e;
  out.prompt_ids = std::move(ids);
  return std::nullopt;
}

std::optional<ApiError> read_stop(const json& body, ParsedRequest& out) {
  const json* stop = field(body, "stop");
  if (!stop) return std::nullopt;
  if (stop->is_string()) {
    if (!stop->get<std::string>().empty()) out.stop.push_back(stop->get<std::string>());
    return std::nullopt;
  }
  if (!stop->is_array()) return wrong_type("stop", "a string or an array of strings", *stop);
  if (stop->size() > 4) return out_of_range("stop", "of at most 4 strings", std::to_string(stop->size()));
  for (size_t i = 0; i < stop->size(); ++i) {
    const json& s = (*stop)[i];
    if (!s.is_string()) return wrong_type("stop[" + std::to_string(i) + "]", "a string", s);
    if (s.get<std::string>().empty()) return invalid_request("Invalid 'stop[" + std::to_string(i) + "]': empty string.", "stop", "invalid_value");
    out.stop.push_back(s.get<std::string>());
  }
  return std::nullopt;
}

// Fields OpenAI defines that this server accepts only with the value that turns them off.
std::optional<ApiError> check_off_fields(const json& body) {
  std::optional<int64_t> count;
  if (auto e = read_integer(body, "n", 1, std::numeric_limits<int64_t>::max(), count)) return e;
  if (count && *count != 1) return unsupported("n", "one choice per request (n = 1).");
  if (auto e = read_integer(body, "best_of", 1, std::numeric_limits<int64_t>::max(), count)) return e;
  if (count && *count != 1) return unsupported("best_of", "best_of = 1 only.");
  if (const json* bias = field(body, "logit_bias"); bias && !(bias->is_object() && bias->empty()))
    return bias->is_object() ? unsupported("logit_bias", "logit_bias is not supported.") : wrong_type("logit_bias", "an object", *bias);
  if (const json* tools = field(body, "tools"); tools && !(tools->is_array() && tools->empty()))
    return tools->is_array() ? unsupported("tools", "tools (function calling) are not supported.") : wrong_type("tools", "an array", *tools);
  if (const json* choice = field(body, "tool_choice"); choice && !(choice->is_string() && (*choice == "none" || *choice == "auto")))
    return unsupported("tool_choice", "tools (function calling) are not supported.");
  bool flag = false;
  if (auto e = read_bool(body, "parallel_tool_calls", flag)) return e;
  if (auto e = read_bool(body, "echo", flag)) return e;
  if (flag) return unsupported("echo", "echo is not supported.");
  if (const json* suffix = field(body, "suffix"); suffix && !(suffix->is_string() && suffix->get<std::string>().empty()))
    return suffix->is_string() ? unsupported("suffix", "suffix is not supported.") : wrong_type("suffix", "a string", *suffix);
  return std::nullopt;
}

std::optional<ApiError> read_chat_extras(const json& body, const ParseOptions& options, ParsedRequest& out) {
  if (const json* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object()) return wrong_type("chat_template_kwargs", "an object", *kwargs);
    for (const auto& [key, value] : kwargs->items())
      if (key != "enable_thinking")
        return unsupported("chat_template_kwargs." + key, "the chat templates take enable_thinking only.");
    if (auto e = read_bool(*kwargs, "enable_thinking", out.enable_thinking)) {
      e->param = "chat_template_kwargs.enable_thinking";
      return e;
    }
  }
  if (const json* format = field(body, "response_format")) {
    if (!format->is_object()) return wrong_type("response_format", "an object", *format);
    const json* type = field(*format, "type");
    if (!type || !type->is_string()) return wrong_type("response_format.type", "a string", type ? *type : json());
    const std::string name = type->get<std::string>();
    if (name == "json_object" || name == "json_schema") {
      if (!options.ignore_response_format)
        return unsupported("response_format", "'" + name + "' needs constrained decoding, which this server does not have "
                                                         "(start it with --ignore-response-format to accept the field and get unconstrained text).");
    } else if (name != "text") {
      return unsupported("response_format.type", "expected 'text', 'json_object' or 'json_schema', got '" + name + "'.");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> read_logprobs(const json& body, Route route, ParsedRequest& out) {
  SamplingParams& s = out.sampling;
  if (route == Route::kChat) {
    if (auto e = read_bool(body, "logprobs", s.logprobs)) return e;
    std::optional<int64_t> top;
    if (auto e = read_integer(body, "top_logprobs", 0, 20, top)) return e;
    if (top && !s.logprobs) return invalid_request("'top_logprobs' needs 'logprobs' to be true.", "top_logprobs", "invalid_value");
    s.top_logprobs = static_cast<int>(top.value_or(0));
    return std::nullopt;
  }
  std::optional<int64_t> top;
  if (auto e = read_integer(body, "logprobs", 0, 5, top)) return e;
  s.logprobs = top.has_value();
  s.top_logprobs = static_cast<int>(top.value_or(0));
  return std::nullopt;
}

// "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ...; last read: '...'"
// without the library's tag, and without the echo of the body (which may hold the prompt).
std::string parse_error_text(const std::string& what) {
  std::string text = what;
  if (size_t tag = text.find("] "); text.rfind("[json.exception", 0) == 0 && tag != std::string::npos) text.erase(0, tag + 2);
  if (size_t echo = text.find("; last read"); echo != std::string::npos) text.erase(echo);
  return text;
}

}  // namespace

std::optional<ApiError> parse_request(Route route, std::string_view text, const ParseOptions& options, ParsedRequest& out) {
  out = ParsedRequest{};
  out.route = route;
  json body;
  try {
    body = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return invalid_request("The request body is not valid JSON: " + parse_error_text(e.what()), {}, "invalid_json");
  }
  if (!body.is_object()) return invalid_request("The request body must be a JSON object, got " + type_name(body) + ".", {}, "invalid_json");
  const auto& own = route == Route::kChat ? kChatFields : kCompletionFields;
  for (const auto& [key, value] : body.items())
    if (!kCommonFields.count(key) && !own.count(key))
      return invalid_request("Unrecognized request argument supplied: " + key, key, "unknown_parameter");

  if (const json* model = field(body, "model")) {
    if (!model->is_string()) return wrong_type("model", "a string", *model);
    out.model = model->get<std::string>();
  }
  if (const json* user = field(body, "user"); user && !user->is_string()) return wrong_type("user", "a string", *user);
  if (auto e = route == Route::kChat ? read_messages(body, out) : read_prompt(body, out)) return e;

  std::optional<int64_t> max_tokens;
  if (auto e = read_integer(body, "max_tokens", 1, std::numeric_limits<int64_t>::max(), max_tokens)) return e;
  if (route == Route::kChat) {
    std::optional<int64_t> max_completion;
    if (auto e = read_integer(body, "max_completion_tokens", 1, std::numeric_limits<int64_t>::max(), max_completion)) return e;
    if (max_tokens && max_completion)
      return invalid_request("Give one of 'max_tokens' and 'max_completion_tokens', not both.", "max_completion_tokens", "invalid_value");
    if (max_completion) max_tokens = max_completion;
  }
  out.max_tokens = max_tokens;

  SamplingParams& s = out.sampling;
  if (auto e = read_number(body, "temperature", 0, 2, false, s.temperature)) return e;
  if (auto e = read_number(body, "top_p", 0, 1, true, s.top_p)) return e;
  std::optional<int64_t> top_k;
  if (auto e = read_integer(body, "top_k", -1, std::numeric_limits<int32_t>::max(), top_k)) return e;
  s.top_k = top_k && *top_k > 0 ? static_cast<int>(*top_k) : 0;
  if (auto e = read_number(body, "presence_penalty", -2, 2, false, s.presence_penalty)) return e;
  if (auto e = read_number(body, "frequency_penalty", -2, 2, false, s.frequency_penalty)) return e;
  if (const json* seed = field(body, "seed")) {
    if (seed->is_number_unsigned()) s.seed = seed->get<uint64_t>();
    else if (seed->is_number_integer()) s.seed = static_cast<uint64_t>(seed->get<int64_t>());
    else return wrong_type("seed", "an integer", *seed);
    out.seeded = true;
  }
  if (auto e = read_stop(body, out)) return e;
  if (auto e = read_logprobs(body, route, out)) return e;
  if (auto e = check_off_fields(body)) return e;
  if (route == Route::kChat)
    if (auto e = read_chat_extras(body, options, out)) return e;

  if (auto e = read_bool(body, "ignore_eos", out.ignore_eos)) return e;
  if (auto e = read_bool(body, "stream", out.stream)) return e;
  if (const json* stream_options = field(body, "stream_options")) {
    if (!stream_options->is_object()) return wrong_type("stream_options", "an object", *stream_options);
    if (!out.stream)
      return invalid_request("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", "invalid_value");
    for (const auto& [key, value] : stream_options->items())
      if (key != "include_usage") return invalid_request("Unrecognized field 'stream_options." + key + "'.", "stream_options." + key, "unknown_parameter");
    if (auto e = read_bool(*stream_options, "include_usage", out.include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  return std::nullopt;
}

}  // namespace agentcompile::serve
