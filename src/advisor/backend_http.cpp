// The HTTP backends: OpenAI Chat Completions (json_schema response format) and the Anthropic
// Messages API (a forced tool call whose input_schema is the answer schema).
#include <nlohmann/json.hpp>

#include "advisor/backend.h"
#include "advisor/http.h"
#include "support/utf8.h"

namespace agentcompile::advisor {

using json = nlohmann::json;

namespace {

constexpr const char* kAnthropicVersion = "2023-06-01";
constexpr const char* kAdviceTool = "record_advice";
constexpr const char* kDiagnosisTool = "record_diagnosis";

std::string excerpt(const std::string& text) { return support::utf8::truncated(support::utf8::repaired(text), 300); }

// The URL without credentials or query (what a record may show).
std::string public_url(const std::string& url) {
  std::string out = url.substr(0, url.find_first_of("?#"));
  const size_t scheme = out.find("://");
  const size_t at = out.find('@', scheme == std::string::npos ? 0 : scheme + 3);
  const size_t slash = out.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (scheme != std::string::npos && at != std::string::npos && (slash == std::string::npos || at < slash))
    out.erase(scheme + 3, at - scheme - 2);
  return out;
}

// `path` appended to the base URL's path, before its query ("https://h/v1?api-version=2" ->
// "https://h/v1/chat/completions?api-version=2", as Azure-style endpoints need); a fragment is never sent.
std::string join_url(const std::string& url, const std::string& path) {
  const size_t fragment = url.find('#');
  const std::string base = url.substr(0, fragment);
  const size_t query = base.find('?');
  std::string head = base.substr(0, query);
  while (!head.empty() && head.back() == '/') head.pop_back();
  return head + path + (query == std::string::npos ? "" : base.substr(query));
}

HttpPolicy policy_of(const AdvisorOptions& o, std::chrono::steady_clock::time_point deadline) {
  HttpPolicy p;
  p.connect_timeout_s = o.connect_timeout_s;
  p.request_timeout_s = o.request_timeout_s;
  p.retries = o.retries;
  p.deadline = deadline;
  return p;
}

// The answer inside a 2xx body, or why there is none.
Reply unwrap(const HttpResult& http, const std::function<Reply(const json&)>& extract) {
  Reply reply;
  reply.attempts = http.attempts;
  if (!http.ok) {
    reply.error = http.error;
    reply.unreachable = http.unreachable;
    return reply;
  }
  const json envelope = json::parse(http.body, nullptr, false);
  if (envelope.is_discarded() || !envelope.is_object()) {
    reply.error = "the response body is not a JSON object: " + excerpt(http.body);
    return reply;
  }
  Reply extracted = extract(envelope);
  extracted.attempts = http.attempts;
  return extracted;
}

class OpenAiBackend final : public Backend {
 public:
  OpenAiBackend(const AdvisorOptions& options, Secret key) : options_(options), key_(std::move(key)) {
    if (options_.url.empty()) options_.url = "https://api.openai.com/v1";
  }
  std::string kind() const override { return "openai"; }
  std::string identity() const override { return "openai:" + options_.model + "@" + public_url(options_.url); }

  Reply ask(const Request& request, std::chrono::steady_clock::time_point deadline) override {
    const json body = {
        {"model", options_.model},
        {"messages", {{{"role", "system"}, {"content", instructions(request.kind)}}, {{"role", "user"}, {"content", request.canonical}}}},
        {"response_format",
         {{"type", "json_schema"},
          {"json_schema", {{"name", request.kind == "diagnosis" ? "compiler_diagnosis" : "region_advice"}, {"strict", true}, {"schema", request.schema}}}}}};
    std::vector<std::string> headers;
    if (!key_.empty()) headers.push_back("Authorization: Bearer " + key_.reveal());
    const HttpResult http = post_json(join_url(options_.url, "/chat/completions"), headers, body.dump(), policy_of(options_, deadline));
    return unwrap(http, [](const json& envelope) {
      Reply reply;
      const json* message = nullptr;
      if (envelope.contains("choices") && envelope["choices"].is_array() && !envelope["choices"].empty() &&
          envelope["choices"][0].is_object() && envelope["choices"][0].contains("message"))
        message = &envelope["choices"][0]["message"];
      if (!message || !message->is_object()) {
        reply.error = "no choices[0].message in the response: " + excerpt(envelope.dump());
      } else if (message->contains("refusal") && (*message)["refusal"].is_string()) {
        reply.error = "the model refused: " + excerpt((*message)["refusal"].get<std::string>());
      } else if (!message->contains("content") || !(*message)["content"].is_string()) {
        reply.error = "choices[0].message has no text content";
      } else {
        reply.ok = true;
        reply.text = (*message)["content"].get<std::string>();
      }
      return reply;
    });
  }

 private:
  AdvisorOptions options_;
  Secret key_;
};

class AnthropicBackend final : public Backend {
 public:
  AnthropicBackend(const AdvisorOptions& options, Secret key) : options_(options), key_(std::move(key)) {
    if (options_.url.empty()) options_.url = "https://api.anthropic.com/v1";
  }
  std::string kind() const override { return "anthropic"; }
  std::string identity() const override { return "anthropic:" + options_.model + "@" + public_url(options_.url); }

  Reply ask(const Request& request, std::chrono::steady_clock::time_point deadline) override {
    const std::string tool = request.kind == "diagnosis" ? kDiagnosisTool : kAdviceTool;
    const json body = {
        {"model", options_.model},
        {"max_tokens", 2048},
        {"system", instructions(request.kind)},
        {"messages", {{{"role", "user"}, {"content", request.canonical}}}},
        {"tools", {{{"name", tool}, {"description", "Record the answer for this request."}, {"input_schema", request.schema}}}},
        {"tool_choice", {{"type", "tool"}, {"name", tool}}}};
    std::vector<std::string> headers = {std::string("anthropic-version: ") + kAnthropicVersion};
    if (!key_.empty()) headers.push_back("x-api-key: " + key_.reveal());
    const HttpResult http = post_json(join_url(options_.url, "/messages"), headers, body.dump(), policy_of(options_, deadline));
    return unwrap(http, [&tool](const json& envelope) {
      Reply reply;
      if (envelope.contains("content") && envelope["content"].is_array())
        for (const auto& block : envelope["content"])
          if (block.is_object() && block.value("type", "") == "tool_use" && block.value("name", "") == tool && block.contains("input")) {
            reply.ok = true;
            reply.text = block["input"].dump();
            return reply;
          }
      reply.error = "no " + tool + " tool_use block in the response (stop_reason " +
                    (envelope.contains("stop_reason") ? envelope["stop_reason"].dump() : std::string("absent")) + ")";
      return reply;
    });
  }

 private:
  AdvisorOptions options_;
  Secret key_;
};

}  // namespace

std::unique_ptr<Backend> make_openai_backend(const AdvisorOptions& options, Secret key) {
  return std::make_unique<OpenAiBackend>(options, std::move(key));
}

std::unique_ptr<Backend> make_anthropic_backend(const AdvisorOptions& options, Secret key) {
  return std::make_unique<AnthropicBackend>(options, std::move(key));
}

}  // namespace agentcompile::advisor
