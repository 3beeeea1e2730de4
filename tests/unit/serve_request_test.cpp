// The server's request and response formats without a model: every field's type and range checks
// (a 400 naming the field), malformed JSON and invalid UTF-8, fields refused unless off, prompts
// through the Qwen3 fixture tokenizer's chat template checked against the context and the backend's
// capabilities, and the OpenAI objects and server-sent events the server writes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serve/make_job.h"
#include "serve/request.h"
#include "serve/response.h"
#include "support/utf8.h"

namespace agentcompile::serve {
namespace {

using json = nlohmann::json;

std::optional<ApiError> parse(Route route, const std::string& body, ParsedRequest* out = nullptr, ParseOptions options = {}) {
  ParsedRequest request;
  auto error = parse_request(route, body, options, request);
  if (out) *out = request;
  return error;
}

std::optional<ApiError> chat(const std::string& fields, ParsedRequest* out = nullptr) {
  return parse(Route::kChat, R"({"messages": [{"role": "user", "content": "hi"}])" + fields + "}", out);
}

TEST(ServeRequest, AChatRequestWithEveryFieldParses) {
  ParsedRequest r;
  auto error = parse(Route::kChat, R"({"model": "m", "messages": [{"role": "developer", "content": "be brief"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
      "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "seed": 123, "stop": ["x", "yz"],
      "presence_penalty": 0.5, "frequency_penalty": -1, "n": 1, "logprobs": true, "top_logprobs": 3,
      "stream": true, "stream_options": {"include_usage": true}, "user": "u", "logit_bias": {},
      "chat_template_kwargs": {"enable_thinking": false}, "response_format": {"type": "text"},
      "tools": [], "tool_choice": "none", "parallel_tool_calls": false, "max_completion_tokens": null, "ignore_eos": true})",
                     &r);
  ASSERT_FALSE(error) << error->message;
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.sampling.seed, 123u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x", "yz"}));
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -1.f);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 3);
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_FALSE(r.enable_thinking);
  EXPECT_TRUE(r.ignore_eos);
}

TEST(ServeRequest, CompletionPromptsAreTextOrIds) {
  ParsedRequest r;
  ASSERT_FALSE(parse(Route::kCompletion, R"({"prompt": "Once", "logprobs": 2, "stop": "\n"})", &r));
  EXPECT_EQ(r.prompt, "Once");
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 2);
  EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
  ASSERT_FALSE(parse(Route::kCompletion, R"({"prompt": [1, 2, 3]})", &r));
  EXPECT_EQ(*r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(parse(Route::kCompletion, R"({"prompt": ["one"]})", &r));
  EXPECT_EQ(r.prompt, "one");
  ASSERT_FALSE(parse(Route::kCompletion, R"({"prompt": [[5, 6]], "logprobs": 0})", &r));
  EXPECT_EQ(*r.prompt_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 0);
}

TEST(ServeRequest, NullIsAbsent) {
  ParsedRequest r;
  ASSERT_FALSE(chat(R"(, "temperature": null, "stop": null, "max_tokens": null, "seed": null)", &r));
  EXPECT_FLOAT_EQ(r.sampling.temperature, 1.f);
  EXPECT_FALSE(r.max_tokens);
  EXPECT_FALSE(r.seeded);
}

TEST(ServeRequest, MalformedBodiesAreRefusedWithoutEchoingThem) {
  for (const std::string body : {"", "{", "{\"messages\": [}", "[1, 2]", "\"text\"", "{\"messages\": [{\"role\": \"user\", \"content\": \"secret\"}]} trailing"}) {
    auto error = parse(Route::kChat, body);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->status, 400);
    EXPECT_EQ(error->type, "invalid_request_error");
    EXPECT_EQ(error->message.find("secret"), std::string::npos) << error->message;
  }
  // Invalid UTF-8 inside a string.
  auto error = parse(Route::kChat, "{\"messages\": [{\"role\": \"user\", \"content\": \"a\xff\xfe\"}]}");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 400);
  EXPECT_EQ(error->code, "invalid_json");
  EXPECT_TRUE(support::utf8::is_valid(error->message)) << "the message itself must be valid JSON text";
}

TEST(ServeRequest, WrongTypesAndRangesNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"(, "max_tokens": "10")", "max_tokens"},
      {R"(, "max_tokens": 0)", "max_tokens"},
      {R"(, "max_tokens": -5)", "max_tokens"},
      {R"(, "max_tokens": 1.5)", "max_tokens"},
      {R"(, "temperature": "hot")", "temperature"},
      {R"(, "temperature": 2.5)", "temperature"},
      {R"(, "top_p": 0)", "top_p"},
      {R"(, "top_p": true)", "top_p"},
      {R"(, "top_k": -2)", "top_k"},
      {R"(, "presence_penalty": 3)", "presence_penalty"},
      {R"(, "frequency_penalty": [1])", "frequency_penalty"},
      {R"(, "seed": "7")", "seed"},
      {R"(, "stop": 5)", "stop"},
      {R"(, "stop": ["a", "b", "c", "d", "e"])", "stop"},
      {R"(, "stop": [""])", "stop"},
      {R"(, "stream": "yes")", "stream"},
      {R"(, "stream_options": {"include_usage": true})", "stream_options"},
      {R"(, "stream": true, "stream_options": {"include_usage": 1})", "stream_options.include_usage"},
      {R"(, "logprobs": 1)", "logprobs"},
      {R"(, "top_logprobs": 2)", "top_logprobs"},
      {R"(, "logprobs": true, "top_logprobs": 21)", "top_logprobs"},
      {R"(, "n": 2)", "n"},
      {R"(, "model": 5)", "model"},
      {R"(, "user": {})", "user"},
      {R"(, "tools": [{"type": "function"}])", "tools"},
      {R"(, "logit_bias": {"5": 10})", "logit_bias"},
      {R"(, "response_format": {"type": "json_object"})", "response_format"},
      {R"(, "response_format": {"type": "yaml"})", "response_format.type"},
      {R"(, "chat_template_kwargs": {"other": 1})", "chat_template_kwargs.other"},
      {R"(, "max_tokens": 5, "max_completion_tokens": 5)", "max_completion_tokens"},
      {R"(, "mystery": 1)", "mystery"},
      {R"(, "ignore_eos": "yes")", "ignore_eos"},
  };
  for (const auto& [fields, param] : cases) {
    auto error = chat(fields);
    ASSERT_TRUE(error) << fields;
    EXPECT_EQ(error->status, 400) << fields;
    EXPECT_EQ(error->param, param) << fields << ": " << error->message;
    EXPECT_FALSE(error->message.empty());
  }
}

TEST(ServeRequest, MessagesMustBeWellFormed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "messages"},
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"messages": [5]})", "messages[0]"},
      {R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].role"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages[0].content[0].type"},
      {R"({"messages": [{"role": "user", "content": "x", "name": "bob"}]})", "messages[0].name"},
  };
  for (const auto& [body, param] : cases) {
    auto error = parse(Route::kChat, body);
    ASSERT_TRUE(error) << body;
    EXPECT_EQ(error->param, param) << body << ": " << error->message;
  }
  EXPECT_EQ(parse(Route::kCompletion, R"({"prompt": 5})")->param, "prompt");
  EXPECT_EQ(parse(Route::kCompletion, R"({"prompt": ["a", "b"]})")->param, "prompt");
  EXPECT_EQ(parse(Route::kCompletion, R"({"prompt": [1, -1]})")->param, "prompt[1]");
  EXPECT_EQ(parse(Route::kCompletion, R"({"prompt": "x", "echo": true})")->param, "echo");
  EXPECT_EQ(parse(Route::kCompletion, R"({"prompt": "x", "messages": []})")->param, "messages") << "chat fields are not completions fields";
}

TEST(ServeRequest, ResponseFormatIsAcceptedOnlyWhenTheServerSaysItIgnoresIt) {
  ParseOptions lenient;
  lenient.ignore_response_format = true;
  EXPECT_FALSE(parse(Route::kChat, R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {}}})",
                     nullptr, lenient));
}

class MakeJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = tokenizer::Tokenizer::from_tokenizer_json(std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3/tokenizer.json",
                                                            std::string(AC_SOURCE_DIR) + "/tests/fixtures/tokenizer/qwen3/tokenizer_config.json");
    ASSERT_TRUE(loaded) << loaded.status().to_string();
    text_.emplace(std::move(*loaded));
    backend_.name = "test";
    backend_.max_context = 64;
    backend_.vocab_size = static_cast<int64_t>(text_->vocab_size());
  }
  std::optional<ApiError> job(Route route, const std::string& body, GenerationJob& out) {
    ParsedRequest request;
    if (auto error = parse_request(route, body, {}, request)) return error;
    return make_job(request, *text_, backend_, limit_, out);
  }
  std::optional<tokenizer::Tokenizer> text_;
  BackendInfo backend_;
  int64_t limit_ = 0;
};

TEST_F(MakeJobTest, ChatGoesThroughTheTemplateAndCompletionsTextAsIs) {
  GenerationJob j;
  ASSERT_FALSE(job(Route::kChat, R"({"messages": [{"role": "user", "content": "Hi"}], "seed": 5, "chat_template_kwargs": {"enable_thinking": false}})", j));
  const std::string rendered = text_->decode(j.prompt);
  EXPECT_NE(rendered.find("<|im_start|>user\nHi<|im_end|>"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("<think>\n\n</think>"), std::string::npos) << "enable_thinking false reaches the template";
  EXPECT_EQ(j.max_tokens, 64 - static_cast<int64_t>(j.prompt.size())) << "no max_tokens: up to the end of the context";
  EXPECT_EQ(j.sampling.seed, 5u);
  ASSERT_FALSE(job(Route::kCompletion, R"({"prompt": "Hi there", "max_tokens": 3})", j));
  EXPECT_EQ(text_->decode(j.prompt), "Hi there");
  EXPECT_EQ(j.max_tokens, 3);
}

TEST_F(MakeJobTest, ContextLimitsAreClearErrors) {
  GenerationJob j;
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += " word";
  auto error = job(Route::kCompletion, R"({"prompt": ")" + long_prompt + R"("})", j);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, "context_length_exceeded");
  EXPECT_NE(error->message.find("maximum context length is 64"), std::string::npos) << error->message;
  error = job(Route::kCompletion, R"({"prompt": "Hi", "max_tokens": 1000000000000})", j);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->param, "max_tokens");
  EXPECT_EQ(error->code, "context_length_exceeded");
  error = job(Route::kCompletion, R"({"prompt": [999999999]})", j);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->param, "prompt");
  error = job(Route::kCompletion, R"({"prompt": ""})", j);
  ASSERT_TRUE(error) << "an empty prompt has no token to start from";
}

TEST_F(MakeJobTest, TheServersTokenLimitCapsRequests) {
  limit_ = 5;
  GenerationJob j;
  ASSERT_FALSE(job(Route::kCompletion, R"({"prompt": "Hi"})", j));
  EXPECT_EQ(j.max_tokens, 5) << "no max_tokens: the server's limit";
  ASSERT_FALSE(job(Route::kCompletion, R"({"prompt": "Hi", "max_tokens": 3})", j));
  EXPECT_EQ(j.max_tokens, 3);
  auto error = job(Route::kCompletion, R"({"prompt": "Hi", "max_tokens": 6})", j);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->param, "max_tokens");
}

TEST_F(MakeJobTest, FieldsTheBackendCannotHonourAreRefused) {
  backend_.penalties = false;
  backend_.logprobs = false;
  GenerationJob j;
  EXPECT_EQ(job(Route::kCompletion, R"({"prompt": "Hi", "presence_penalty": 0.5})", j)->param, "presence_penalty");
  EXPECT_EQ(job(Route::kCompletion, R"({"prompt": "Hi", "frequency_penalty": 0.5})", j)->param, "frequency_penalty");
  EXPECT_EQ(job(Route::kCompletion, R"({"prompt": "Hi", "logprobs": 1})", j)->param, "logprobs");
  EXPECT_FALSE(job(Route::kCompletion, R"({"prompt": "Hi", "presence_penalty": 0, "temperature": 0.7, "top_k": 5})", j));
}

TEST_F(MakeJobTest, RequestsWithoutASeedGetDifferentSeeds) {
  GenerationJob a, b;
  ASSERT_FALSE(job(Route::kCompletion, R"({"prompt": "Hi"})", a));
  ASSERT_FALSE(job(Route::kCompletion, R"({"prompt": "Hi"})", b));
  EXPECT_NE(a.sampling.seed, b.sampling.seed);
}

// "data: {...}\n\n" events of a stream, parsed; the last must be [DONE].
std::vector<json> events_of(const std::string& stream) {
  std::vector<json> events;
  size_t at = 0;
  while (at < stream.size()) {
    const size_t end = stream.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "every event ends with a blank line";
    if (end == std::string::npos) break;
    const std::string event = stream.substr(at, end - at);
    EXPECT_EQ(event.rfind("data: ", 0), 0u) << event;
    events.push_back(event == "data: [DONE]" ? json("[DONE]") : json::parse(event.substr(6)));
    at = end + 2;
  }
  return events;
}

TEST_F(MakeJobTest, ChatStreamsAreOpenAIChunksEndedByDone) {
  ResponseWriter writer(Route::kChat, "model-x", *text_, /*logprobs=*/true, /*include_usage=*/true);
  const int32_t hello = text_->encode("Hello", false)[0];
  std::string stream = writer.stream_start();
  stream += writer.stream_piece(TextPiece{"Hello", {TokenLogprob{hello, -0.25f, {{hello, -0.25f}}}}});
  stream += writer.stream_piece(TextPiece{});  // nothing to send: no event
  stream += writer.stream_end(TextPiece{"!", {}}, "stop", Usage{5, 2});
  const std::vector<json> events = events_of(stream);
  ASSERT_EQ(events.size(), 6u) << stream;
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(events[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(events[i]["id"], writer.id());
    EXPECT_EQ(events[i]["model"], "model-x");
  }
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(events[1]["choices"][0]["delta"]["content"], "Hello");
  const json& lp = events[1]["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(lp["token"], "Hello");
  EXPECT_FLOAT_EQ(lp["logprob"].get<float>(), -0.25f);
  EXPECT_EQ(lp["bytes"], json::array({72, 101, 108, 108, 111}));
  EXPECT_EQ(lp["top_logprobs"].size(), 1u);
  EXPECT_TRUE(events[1]["usage"].is_null()) << "with include_usage every chunk carries usage: null";
  EXPECT_EQ(events[2]["choices"][0]["delta"]["content"], "!");
  EXPECT_EQ(events[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_TRUE(events[3]["choices"][0]["delta"].empty());
  EXPECT_TRUE(events[4]["choices"].empty());
  EXPECT_EQ(events[4]["usage"]["total_tokens"], 7);
  EXPECT_EQ(events[5], "[DONE]");
}

TEST_F(MakeJobTest, CompletionObjectsAndErrorEvents) {
  ResponseWriter writer(Route::kCompletion, "m", *text_, true, false);
  const std::vector<int32_t> ids = text_->encode("Hi there", false);
  std::vector<TokenLogprob> lps;
  for (int32_t id : ids) lps.push_back(TokenLogprob{id, -1.f, {{id, -1.f}}});
  const json answer = json::parse(json_text(writer.complete("Hi there", lps, "length", Usage{3, 2})));
  EXPECT_EQ(answer["object"], "text_completion");
  EXPECT_EQ(answer["choices"][0]["text"], "Hi there");
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(answer["usage"], json({{"prompt_tokens", 3}, {"completion_tokens", 2}, {"total_tokens", 5}}));
  const json& lp = answer["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), ids.size());
  EXPECT_EQ(lp["text_offset"][0], 0);
  EXPECT_EQ(lp["text_offset"][1], text_->token_bytes(ids[0]).size());
  const std::vector<json> error = events_of(writer.stream_error(server_error("boom")));
  ASSERT_EQ(error.size(), 2u);
  EXPECT_EQ(error[0]["error"]["message"], "boom");
  EXPECT_EQ(error[0]["error"]["type"], "server_error");
  EXPECT_TRUE(error[0]["error"].contains("param") && error[0]["error"].contains("code"));
  EXPECT_EQ(error[1], "[DONE]");
}

}  // namespace
}  // namespace agentcompile::serve
