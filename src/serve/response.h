// The answers of /v1/chat/completions and /v1/completions in OpenAI's formats: the whole object
// (chat.completion, text_completion) and, when streaming, server-sent events of chunk objects
// (chat.completion.chunk, text_completion) ended by "data: [DONE]".
//
// A chat stream opens with a chunk whose delta carries the role, then one chunk per text piece, then
// a chunk with an empty delta and the finish reason; with stream_options.include_usage every chunk
// has "usage": null and one more chunk with no choices carries the usage. An error after the stream
// began is an event holding OpenAI's error object, then [DONE].
//
// Log-probabilities: chat's {"content": [{token, logprob, bytes, top_logprobs}]}; completions'
// {tokens, token_logprobs, top_logprobs, text_offset}. A token's text is its bytes (a token may hold
// part of a UTF-8 character: its "token" text then carries U+FFFD, "bytes" the exact bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/api_error.h"
#include "serve/generation_stream.h"
#include "serve/request.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::serve {

// JSON text; invalid UTF-8 (which never should reach here) becomes U+FFFD rather than an exception.
std::string json_text(const nlohmann::ordered_json& value);

// One server-sent event carrying `value`: "data: <json>\n\n".
std::string sse_event(const nlohmann::ordered_json& value);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

nlohmann::ordered_json usage_json(const Usage& usage);

class ResponseWriter {
 public:
  ResponseWriter(Route route, std::string model, const tokenizer::Tokenizer& tokenizer, bool logprobs, bool include_usage);

  const std::string& id() const { return id_; }

  // The whole answer.
  nlohmann::ordered_json complete(const std::string& text, const std::vector<TokenLogprob>& logprobs, const std::string& finish_reason,
                          const Usage& usage);

  // Streaming: the events that open the stream (chat: the role chunk), one text piece ("" when it
  // holds nothing), the end (the last piece, the finish chunk, the usage chunk, [DONE]), or an error.
  std::string stream_start();
  std::string stream_piece(const TextPiece& piece);
  std::string stream_end(const TextPiece& last, const std::string& finish_reason, const Usage& usage);
  std::string stream_error(const ApiError& error);

 private:
  nlohmann::ordered_json envelope(const char* object) const;
  nlohmann::ordered_json logprobs_json(const std::vector<TokenLogprob>& logprobs);
  nlohmann::ordered_json chunk(nlohmann::ordered_json choice) const;

  Route route_;
  std::string model_, id_;
  int64_t created_ = 0;
  tokenizer::Tokenizer tokenizer_;
  bool logprobs_ = false, include_usage_ = false;
  size_t text_offset_ = 0;  // completions' text_offset: bytes of the completion before the next token
};

}  // namespace agentcompile::serve
