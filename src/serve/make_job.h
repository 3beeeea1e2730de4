// From a parsed request to what the scheduler runs: the prompt's ids (chat messages through the
// model's chat template, completions text through the tokenizer with its special tokens, or ids as
// given), max_tokens checked against the context, the seed, and the request's fields checked against
// what the backend honours. Every refusal is a 400 that names the field.
//
// Context: prompt + max_tokens must fit in the backend's context (OpenAI's rule). The server may cap
// max_tokens (`limit`, 0: none, as llama.cpp's --n-predict does): a request asking more is refused, a
// request without max_tokens gets the cap, or without one the rest of the context.
#pragma once

#include <optional>

#include "serve/api_error.h"
#include "serve/backend.h"
#include "serve/request.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::serve {

std::optional<ApiError> make_job(const ParsedRequest& request, const tokenizer::Tokenizer& tokenizer, const BackendInfo& backend,
                                 int64_t limit, GenerationJob& job);

}  // namespace agentcompile::serve
