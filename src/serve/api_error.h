// The errors the server answers with: an HTTP status and OpenAI's error object,
// {"error": {"message", "type", "param", "code"}}, so clients written for the OpenAI API show them as
// they would show OpenAI's own. Everything the server refuses (bad JSON, a field of the wrong type, a
// prompt longer than the context, a full queue, a missing key) is one of these; none is a bare text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace agentcompile::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";  // OpenAI's types: invalid_request_error, authentication_error, ...
  std::string param;                           // the request field at fault; empty: null
  std::string code;                            // e.g. "context_length_exceeded"; empty: null

  nlohmann::ordered_json to_json() const;
};

// 400: a field is missing, of the wrong type, out of range, or not supported.
ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});
// 401: no or the wrong bearer key.
ApiError unauthorized(std::string message);
// 404: no such route or model.
ApiError not_found(std::string message);
// 429: the queue is full.
ApiError too_many_requests(std::string message);
// 500: the backend failed while generating.
ApiError server_error(std::string message);
// 503: the server is shutting down.
ApiError unavailable(std::string message);

}  // namespace agentcompile::serve
