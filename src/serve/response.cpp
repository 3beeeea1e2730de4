// OpenAI response objects, stream chunks and SSE framing (see response.h).
#include "serve/response.h"

#include <chrono>
#include <cstdio>
#include <random>

#include "support/utf8.h"

namespace agentcompile::serve {

namespace {

using json = nlohmann::ordered_json;

std::string random_id(const char* prefix) {
  std::random_device device;
  char hex[25];
  std::snprintf(hex, sizeof(hex), "%08x%08x%08x", device(), device(), device());
  return std::string(prefix) + hex;
}

json byte_list(std::string_view bytes) {
  json list = json::array();
  for (char c : bytes) list.push_back(static_cast<uint8_t>(c));
  return list;
}

}  // namespace

std::string json_text(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& value) { return "data: " + json_text(value) + "\n\n"; }

json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens},
          {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

ResponseWriter::ResponseWriter(Route route, std::string model, const tokenizer::Tokenizer& tokenizer, bool logprobs, bool include_usage)
    : route_(route),
      model_(std::move(model)),
      id_(random_id(route == Route::kChat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      tokenizer_(tokenizer),
      logprobs_(logprobs),
      include_usage_(include_usage) {}

json ResponseWriter::envelope(const char* object) const {
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}, {"system_fingerprint", nullptr}};
}

json ResponseWriter::logprobs_json(const std::vector<TokenLogprob>& logprobs) {
  if (!logprobs_) return nullptr;
  auto text_of = [this](int32_t token) { return support::utf8::repaired(tokenizer_.token_bytes(token)); };
  if (route_ == Route::kChat) {
    json content = json::array();
    for (const TokenLogprob& entry : logprobs) {
      json top = json::array();
      for (const auto& [token, logprob] : entry.top)
        top.push_back({{"token", text_of(token)}, {"logprob", logprob}, {"bytes", byte_list(tokenizer_.token_bytes(token))}});
      content.push_back({{"token", text_of(entry.token)},
                         {"logprob", entry.logprob},
                         {"bytes", byte_list(tokenizer_.token_bytes(entry.token))},
                         {"top_logprobs", top}});
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), offsets = json::array();
  for (const TokenLogprob& entry : logprobs) {
    tokens.push_back(text_of(entry.token));
    token_logprobs.push_back(entry.logprob);
    json top = json::object();
    for (const auto& [token, logprob] : entry.top) top[text_of(token)] = logprob;
    top_logprobs.push_back(top);
    offsets.push_back(text_offset_);
    text_offset_ += tokenizer_.token_bytes(entry.token).size();
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

json ResponseWriter::complete(const std::string& text, const std::vector<TokenLogprob>& logprobs, const std::string& finish_reason,
                              const Usage& usage) {
  json choice = {{"index", 0}, {"logprobs", logprobs_json(logprobs)}, {"finish_reason", finish_reason}};
  json answer;
  if (route_ == Route::kChat) {
    answer = envelope("chat.completion");
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
  } else {
    answer = envelope("text_completion");
    choice["text"] = text;
  }
  answer["choices"] = json::array({choice});
  answer["usage"] = usage_json(usage);
  return answer;
}

json ResponseWriter::chunk(json choice) const {
  json out = envelope(route_ == Route::kChat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array({std::move(choice)});
  if (include_usage_) out["usage"] = nullptr;
  return out;
}

std::string ResponseWriter::stream_start() {
  if (route_ != Route::kChat) return {};
  return sse_event(chunk({{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}}));
}

std::string ResponseWriter::stream_piece(const TextPiece& piece) {
  if (piece.empty()) return {};
  json choice = {{"index", 0}, {"logprobs", logprobs_json(piece.logprobs)}, {"finish_reason", nullptr}};
  if (route_ == Route::kChat)
    choice["delta"] = {{"content", piece.text}};
  else
    choice["text"] = piece.text;
  return sse_event(chunk(std::move(choice)));
}

std::string ResponseWriter::stream_end(const TextPiece& last, const std::string& finish_reason, const Usage& usage) {
  std::string events = stream_piece(last);
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  if (route_ == Route::kChat)
    choice["delta"] = json::object();
  else
    choice["text"] = "";
  events += sse_event(chunk(std::move(choice)));
  if (include_usage_) {
    json tail = envelope(route_ == Route::kChat ? "chat.completion.chunk" : "text_completion");
    tail["choices"] = json::array();
    tail["usage"] = usage_json(usage);
    events += sse_event(tail);
  }
  return events + kSseDone;
}

std::string ResponseWriter::stream_error(const ApiError& error) { return sse_event(error.to_json()) + kSseDone; }

}  // namespace agentcompile::serve
