// Chat-template or raw encoding of a prompt.
#include "prompt.h"

#include "commands.h"

namespace agentcompile::tools {

std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& text, const std::vector<tokenizer::ChatMessage>& messages, bool raw,
                                   const tokenizer::ChatOptions& options) {
  if (messages.empty()) fail("empty prompt");
  if (raw || text.chat_template().family() == tokenizer::ChatFamily::kNone)
    return text.encode(messages.back().content, /*add_special_tokens=*/true);
  auto rendered = text.chat_template().render(messages, options);
  if (!rendered) fail(rendered.status().to_string() + " (use --raw to send the text without a chat template)");
  return text.encode(*rendered, /*add_special_tokens=*/false);  // the template writes the special tokens
}

}  // namespace agentcompile::tools
