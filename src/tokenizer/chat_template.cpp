// The built-in chat renderers (see chat_template.h). Each follows its Jinja template statement by
// statement; the Python string methods the templates call (strip, lstrip, split, Jinja's trim) are
// spelled out below with the same semantics.
#include "tokenizer/chat_template.h"

#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer {

namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }
bool starts_with(std::string_view text, std::string_view part) { return text.substr(0, part.size()) == part; }
bool ends_with(std::string_view text, std::string_view part) {
  return text.size() >= part.size() && text.substr(text.size() - part.size()) == part;
}

// Python's str.lstrip('\n') / rstrip('\n') / strip('\n').
std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}
std::string_view strip_newlines(std::string_view s) { return rstrip_newlines(lstrip_newlines(s)); }

// Jinja's trim: Python's str.strip(), which removes Unicode white space (str.isspace) at both ends.
bool is_python_space(uint32_t cp) { return utf8::is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F); }
std::string_view trim(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    size_t pos = begin;
    if (!is_python_space(utf8::next_code_point(s, pos))) break;
    begin = pos;
  }
  size_t end = s.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!is_python_space(utf8::next_code_point(s, pos))) break;
    end = start;
  }
  return s.substr(begin, end - begin);
}

// Python's s.split(separator)[0] and [-1].
std::string_view before_first(std::string_view s, std::string_view separator) {
  const size_t at = s.find(separator);
  return at == std::string_view::npos ? s : s.substr(0, at);
}
std::string_view after_last(std::string_view s, std::string_view separator) {
  const size_t at = s.rfind(separator);
  return at == std::string_view::npos ? s : s.substr(at + separator.size());
}

// Jinja string-literal escapes in the default system prompt we lift out of a template.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char next = s[++i];
    switch (next) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      default: out.push_back(next);
    }
  }
  return out;
}

// A ChatML template that writes a system turn for conversations without one holds it as one literal:
// '<|im_start|>system\n...<|im_end|>'. Empty when there is none.
std::string find_default_system_prompt(std::string_view text) {
  for (std::string_view opener : {"'<|im_start|>system\\n", "'<|im_start|>system\n", "\"<|im_start|>system\\n",
                                  "\"<|im_start|>system\n"}) {
    const size_t at = text.find(opener);
    if (at == std::string_view::npos) continue;
    const size_t begin = at + opener.size();
    const size_t end = text.find("<|im_end|>", begin);
    if (end == std::string_view::npos) continue;
    const std::string_view body = text.substr(begin, end - begin);
    // '<|im_start|>system\n' + messages[0].content: the system turn of a conversation that has one.
    if (contains(body, "'") || contains(body, "\"") || contains(body, "{")) continue;
    return unescape(body);
  }
  return {};
}

void render_chatml(std::span<const ChatMessage> messages, const std::string& default_system, const ChatOptions& options,
                   std::string& out) {
  if (!default_system.empty() && messages.front().role != "system")
    out += "<|im_start|>system\n" + default_system + "<|im_end|>\n";
  for (const ChatMessage& message : messages) out += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
  if (options.add_generation_prompt) out += "<|im_start|>assistant\n";
}

void render_llama3(std::span<const ChatMessage> messages, const std::string& bos_token, std::string& out) {
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i == 0) out += bos_token;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n";
    out += trim(messages[i].content);
    out += "<|eot_id|>";
  }
  out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

void render_qwen3(std::span<const ChatMessage> messages, const ChatOptions& options, std::string& out) {
  const size_t count = messages.size();
  if (messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  // The last user turn that is a real query (not a tool response wrapped as one): assistant turns after
  // it keep their reasoning.
  size_t last_query = count - 1;
  for (size_t back = 0; back < count; ++back) {
    const size_t index = count - 1 - back;
    const ChatMessage& message = messages[index];
    if (message.role == "user" &&
        !(starts_with(message.content, "<tool_response>") && ends_with(message.content, "</tool_response>"))) {
      last_query = index;
      break;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    const ChatMessage& message = messages[i];
    const bool last = i + 1 == count;
    if (message.role == "user" || (message.role == "system" && i != 0)) {
      out += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n";
    } else if (message.role == "assistant") {
      std::string_view content = message.content;
      std::string_view reasoning;
      if (contains(message.content, "</think>")) {
        content = lstrip_newlines(after_last(message.content, "</think>"));
        reasoning = lstrip_newlines(after_last(rstrip_newlines(before_first(message.content, "</think>")), "<think>"));
      }
      out += "<|im_start|>" + message.role + "\n";
      if (i > last_query && (last || !reasoning.empty())) {
        out += "<think>\n";
        out += strip_newlines(reasoning);
        out += "\n</think>\n\n";
        out += lstrip_newlines(content);
      } else {
        out += content;
      }
      out += "<|im_end|>\n";
    } else if (message.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + message.content + "\n</tool_response>";
      if (last || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
}

}  // namespace

std::string_view chat_family_name(ChatFamily family) {
  switch (family) {
    case ChatFamily::kNone: return "none";
    case ChatFamily::kUnrecognized: return "unrecognized";
    case ChatFamily::kQwen3: return "qwen3";
    case ChatFamily::kLlama3: return "llama3";
    case ChatFamily::kChatML: return "chatml";
  }
  return "?";
}

ChatTemplate ChatTemplate::from_template_text(std::string text, std::string bos_token) {
  ChatTemplate result;
  result.bos_token_ = std::move(bos_token);
  if (text.empty()) return result;
  if (contains(text, "<|start_header_id|>")) {
    // Llama 3.1+ templates add a dated system header and tool prompts we do not render.
    result.family_ = contains(text, "Cutting Knowledge Date") ? ChatFamily::kUnrecognized : ChatFamily::kLlama3;
  } else if (contains(text, "<|im_start|>")) {
    if (contains(text, "enable_thinking") || contains(text, "<think>")) {
      result.family_ = ChatFamily::kQwen3;
    } else {
      result.family_ = ChatFamily::kChatML;
      result.default_system_ = find_default_system_prompt(text);
    }
  } else {
    result.family_ = ChatFamily::kUnrecognized;
  }
  result.text_ = std::move(text);
  return result;
}

Expected<std::string> ChatTemplate::render(std::span<const ChatMessage> messages, const ChatOptions& options) const {
  if (family_ == ChatFamily::kNone) return error(ErrorCode::kNotFound, "the tokenizer has no chat template");
  if (family_ == ChatFamily::kUnrecognized)
    return error(ErrorCode::kUnsupported, "chat template not recognized (built in: Qwen3, Llama 3, ChatML); it begins: " +
                                              text_.substr(0, 120));
  if (messages.empty()) return error(ErrorCode::kInvalidArgument, "cannot render an empty conversation");
  std::string out;
  switch (family_) {
    case ChatFamily::kQwen3: render_qwen3(messages, options, out); break;
    case ChatFamily::kLlama3: render_llama3(messages, bos_token_, out); break;
    case ChatFamily::kChatML: render_chatml(messages, default_system_, options, out); break;
    default: break;
  }
  return out;
}

}  // namespace agentcompile::tokenizer
