// Text prompts of the subcommands that take one (run, reference, tokenize): where the text comes from
// (-p TEXT, -p - for stdin, or --prompt-file FILE, so prompts need not fit in one argument's 128 KiB)
// and how it becomes token ids (the model's chat template, or with --raw the text as is with the
// tokenizer's own special tokens). run, reference and tokenize --chat apply the template alike: a
// tokenizer without one is an error that says how to send the text as is, never a silent fallback.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tokenizer/tokenizer.h"

namespace agentcompile::tools {

// Larger prompts than this are refused when read (far beyond any model's context in tokens).
inline constexpr size_t kMaxPromptBytes = size_t{64} << 20;

struct PromptFlags {
  std::string text;  // -p (or "-" for stdin)
  std::string file;  // --prompt-file
  CLI::Option* text_option = nullptr;
  CLI::Option* file_option = nullptr;

  bool given() const { return text_option->count() > 0 || file_option->count() > 0; }
};

// Registers -p/--prompt and --prompt-file (either, not both) on `cmd`.
void add_prompt_flags(CLI::App& cmd, PromptFlags& flags, const std::string& what);

// The prompt's text from -p, stdin (-p -) or --prompt-file; fails the command when it is empty, when
// the file cannot be read, or when it is larger than kMaxPromptBytes.
std::string read_prompt(const PromptFlags& flags);

// The conversation through the model's chat template; fails the command when the tokenizer has no
// template or cannot render this one, with `instead` saying how to send the text without it.
std::string render_chat(const tokenizer::Tokenizer& text, const std::vector<tokenizer::ChatMessage>& messages,
                        const tokenizer::ChatOptions& options, const std::string& instead);

// The ids of a conversation: rendered by render_chat, or with `raw` the last message's text with the
// tokenizer's own special tokens.
std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& text, const std::vector<tokenizer::ChatMessage>& messages, bool raw,
                                   const tokenizer::ChatOptions& options = {});

}  // namespace agentcompile::tools
