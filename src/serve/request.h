// Parsing and checking the body of POST /v1/chat/completions and /v1/completions.
//
// Every field the server knows is checked for its type and range, and the first one at fault is named
// in a 400 (OpenAI's error object, `param` set). Fields OpenAI defines that this server does not
// implement are accepted only with their "off" value (n = 1, echo false, no tools, ...), so nothing a
// client asks for is silently ignored; unknown fields are refused, as OpenAI refuses them. null counts
// as absent for every optional field.
//
// Fields: model, messages (chat: role system | developer | user | assistant; content a string or text
// parts) or prompt (completions: a string or token ids, or a list holding one of those), max_tokens /
// max_completion_tokens, temperature [0, 2], top_p (0, 1], top_k (-1 or 0: off), seed, stop (a string
// or up to 4), presence_penalty and frequency_penalty [-2, 2], n = 1, logprobs (chat: a bool, with
// top_logprobs 0..20; completions: 0..5), stream, stream_options.include_usage, user,
// chat_template_kwargs.enable_thinking (vLLM's extension, for Qwen3), ignore_eos (vLLM's and
// llama.cpp's extension: generate max_tokens whatever comes, for benchmarks), response_format (type text;
// json_object and json_schema only when the server was started with --ignore-response-format, as this
// server has no constrained decoding).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api_error.h"
#include "serve/sampling.h"
#include "tokenizer/chat_template.h"

namespace agentcompile::serve {

enum class Route { kChat, kCompletion };

struct ParsedRequest {
  Route route = Route::kChat;
  std::string model;                               // as the client named it; answers name the served model
  std::vector<tokenizer::ChatMessage> messages;    // chat
  bool enable_thinking = true;                     // chat_template_kwargs.enable_thinking
  std::string prompt;                              // completions: text
  std::optional<std::vector<int32_t>> prompt_ids;  // completions: ids instead of text
  std::optional<int64_t> max_tokens;               // absent: up to the end of the context
  SamplingParams sampling;                         // seed: random unless `seeded`
  bool seeded = false;
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;                      // stream_options.include_usage
  bool ignore_eos = false;
};

struct ParseOptions {
  bool ignore_response_format = false;  // accept json_object / json_schema without enforcing them
};

// Fills `out` from the JSON body, or returns the error the client gets.
std::optional<ApiError> parse_request(Route route, std::string_view body, const ParseOptions& options, ParsedRequest& out);

}  // namespace agentcompile::serve
