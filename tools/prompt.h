// Text prompts of the generating subcommands (run, reference): a conversation rendered through the
// model's chat template, or, with --raw or for a model without a template, the last message's text
// with the tokenizer's own special tokens.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace agentcompile::tools {

// Fails the command with the template's error (and a hint at --raw) when rendering fails.
std::vector<int32_t> encode_prompt(const tokenizer::Tokenizer& text, const std::vector<tokenizer::ChatMessage>& messages, bool raw,
                                   const tokenizer::ChatOptions& options = {});

}  // namespace agentcompile::tools
