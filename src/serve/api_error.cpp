// OpenAI-style error objects and the constructors of the statuses the server uses.
#include "serve/api_error.h"

namespace agentcompile::serve {

nlohmann::ordered_json ApiError::to_json() const {
  nlohmann::ordered_json error = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) error["param"] = param;
  if (!code.empty()) error["code"] = code;
  return {{"error", error}};
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError unauthorized(std::string message) {
  return ApiError{401, std::move(message), "authentication_error", {}, "invalid_api_key"};
}

ApiError not_found(std::string message) { return ApiError{404, std::move(message), "invalid_request_error", {}, "not_found"}; }

ApiError too_many_requests(std::string message) {
  return ApiError{429, std::move(message), "rate_limit_error", {}, "queue_full"};
}

ApiError server_error(std::string message) { return ApiError{500, std::move(message), "server_error", {}, {}}; }

ApiError unavailable(std::string message) { return ApiError{503, std::move(message), "server_error", {}, "shutting_down"}; }

}  // namespace agentcompile::serve
