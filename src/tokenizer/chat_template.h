// Chat templates: turning a conversation into the prompt text a model was trained on.
//
// We do not interpret Jinja. A template's text selects one of a few built-in renderers, each written to
// produce exactly what transformers' apply_chat_template(..., tokenize=False) makes of that family's
// template for plain {role, content} messages (no tools, no images):
//   Qwen3    '<|im_start|>' and '<think>' / enable_thinking: system first, the think block for the
//            assistant turns after the last user query, '<think>\n\n</think>\n\n' after the
//            generation prompt when thinking is off.
//   Llama 3  '<|start_header_id|>': bos_token, then per message a header, the content trimmed of white
//            space and '<|eot_id|>'; the assistant header always follows (this template ignores
//            add_generation_prompt). The Llama 3.1 template (date and knowledge-cutoff header) is not
//            built in and is refused.
//   ChatML   '<|im_start|>' otherwise (SmolLM2, Qwen2): when the template writes a default system message
//            for conversations without one, that text is taken from the template.
// Anything else is refused with kUnsupported rather than rendered wrongly.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "agentcompile/status.h"

namespace agentcompile::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  // Qwen3: false appends the empty think block after the generation prompt, as enable_thinking=False does.
  bool enable_thinking = true;
};

enum class ChatFamily { kNone, kUnrecognized, kQwen3, kLlama3, kChatML };

std::string_view chat_family_name(ChatFamily family);

class ChatTemplate {
 public:
  ChatTemplate() = default;  // no template: render() fails with kNotFound
  // `bos_token` is the text of the tokenizer's BOS token (Llama 3 writes it first).
  static ChatTemplate from_template_text(std::string text, std::string bos_token);

  ChatFamily family() const { return family_; }
  const std::string& text() const { return text_; }
  const std::string& default_system_prompt() const { return default_system_; }

  // Errors: kNotFound without a template, kUnsupported for a template we do not recognize,
  // kInvalidArgument for an empty conversation.
  Expected<std::string> render(std::span<const ChatMessage> messages, const ChatOptions& options = {}) const;

 private:
  std::string text_;
  std::string bos_token_;
  std::string default_system_;
  ChatFamily family_ = ChatFamily::kNone;
};

}  // namespace agentcompile::tokenizer
