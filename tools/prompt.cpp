// Prompt text from the command line, a file or stdin, and its chat-template or raw encoding.
#include "prompt.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "commands.h"

namespace agentcompile::tools {

namespace {

// At most kMaxPromptBytes + 1 bytes of `in`, so an oversized prompt is noticed without holding it.
std::string read_bounded(std::istream& in, const std::string& name) {
  std::string text;
  char buffer[65536];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxPromptBytes)
      fail(name + ": the prompt is larger than " + std::to_string(kMaxPromptBytes >> 20) + " MiB");
  }
  if (in.bad()) fail(name + ": cannot read the prompt: " + std::strerror(errno));
  return text;
}

}  // namespace

void add_prompt_flags(CLI::App& cmd, PromptFlags& flags, const std::string& what) {
  flags.text_option = cmd.add_option("-p,--prompt", flags.text, what + " (- reads it from stdin)");
  flags.file_option = cmd.add_option("--prompt-file", flags.file, "Read the prompt from this file");
  flags.text_option->excludes(flags.file_option);
  flags.file_option->excludes(flags.text_option);
}

std::string read_prompt(const PromptFlags& flags) {
  std::string text;
  if (flags.file_option->count() > 0) {
    std::ifstream in(flags.file, std::ios::binary);
    if (!in) fail("--prompt-file " + flags.file + ": cannot open: " + std::strerror(errno));
    text = read_bounded(in, "--prompt-file " + flags.file);
  } else if (flags.text == "-") {
    text = read_bounded(std::cin, "-p - (stdin)");
  } else {
    text = flags.text;
  }
  if (text.empty()) fail("the prompt is empty");
  return text;
}

std::string render_chat(const tokenizer::Tokenizer& text, const std::vector<tokenizer::ChatMessage>& messages,
                        const tokenizer::ChatOptions& options, const std::string& instead) {
  auto rendered = text.chat_template().render(messages, options);
  if (!rendered) fail(text.source() + ": " + rendered.status().message() + " (" + instead + ")");
  return std::move(*rendered);
}

std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& text, const std::vector<tokenizer::ChatMessage>& messages, bool raw,
                                   const tokenizer::ChatOptions& options) {
  if (messages.empty()) fail("the prompt is empty");
  if (raw) return text.encode(messages.back().content, /*add_special_tokens=*/true);
  const std::string rendered = render_chat(text, messages, options, "use --raw to send the text without a chat template");
  return text.encode(rendered, /*add_special_tokens=*/false);  // the template writes the special tokens
}

}  // namespace agentcompile::tools
