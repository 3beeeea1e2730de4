// libcurl POST with timeouts, retries, exponential backoff and Retry-After.
#include "advisor/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "support/utf8.h"

namespace agentcompile::advisor {

namespace {

constexpr double kMaxBackoff_s = 8;
constexpr double kMaxRetryAfter_s = 120;

struct Body {
  std::string text;
  bool too_long = false;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* body = static_cast<Body*>(user);
  const size_t n = size * count;
  if (body->text.size() + n > kMaxResponseBytes) {
    body->too_long = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  body->text.append(data, n);
  return n;
}

double seconds_left(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
}

// Retry-After: delta-seconds or an HTTP date; negative when absent or unparseable.
double retry_after_s(CURL* curl) {
  curl_header* header = nullptr;
  if (curl_easy_header(curl, "Retry-After", 0, CURLH_HEADER, -1, &header) != CURLHE_OK || !header) return -1;
  const std::string value = header->value;
  char* end = nullptr;
  const double seconds = std::strtod(value.c_str(), &end);
  if (end != value.c_str() && *end == '\0') return std::max(0.0, seconds);
  const time_t when = curl_getdate(value.c_str(), nullptr);
  if (when < 0) return -1;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

bool unreachable(CURLcode code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY;
}

bool retryable(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return true;
    default:
      return false;
  }
}

std::string excerpt(const std::string& text) { return support::utf8::truncated(support::utf8::repaired(text), 300); }

}  // namespace

HttpResult post_json(const std::string& url, const std::vector<std::string>& headers, const std::string& body,
                     const HttpPolicy& policy) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpResult result;
  for (int attempt = 0; attempt <= policy.retries; ++attempt) {
    const double left = seconds_left(policy.deadline);
    if (left <= 0) {
      result.error = "advice time budget spent" + (result.error.empty() ? "" : " (last: " + result.error + ")");
      return result;
    }
    CURL* curl = curl_easy_init();
    if (!curl) {
      result.error = "curl_easy_init failed";
      return result;
    }
    curl_slist* list = nullptr;
    for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
    list = curl_slist_append(list, "Content-Type: application/json");
    list = curl_slist_append(list, "Expect:");
    char curl_error[CURL_ERROR_SIZE] = {0};
    Body response;
    const long timeout_ms = static_cast<long>(std::ceil(1000 * std::min(policy.request_timeout_s, left)));
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, static_cast<long>(1000 * policy.connect_timeout_s)));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, curl_error);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "agentcompile-advisor/1");
    const CURLcode code = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    const double retry_after = code == CURLE_OK ? retry_after_s(curl) : -1;
    curl_slist_free_all(list);
    curl_easy_cleanup(curl);

    result.attempts = attempt + 1;
    result.status = status;
    result.body = std::move(response.text);
    bool again = false;
    if (response.too_long) {
      result.error = "the response exceeds the limit of " + std::to_string(kMaxResponseBytes >> 20) + " MiB (HTTP " + std::to_string(status) + ")";
    } else if (code != CURLE_OK) {
      result.error = std::string(curl_easy_strerror(code)) + (curl_error[0] ? std::string(": ") + curl_error : "");
      result.unreachable = unreachable(code);
      again = retryable(code);
    } else if (status >= 200 && status < 300) {
      result.ok = true;
      result.error.clear();
      return result;
    } else {
      result.error = "HTTP " + std::to_string(status) + (result.body.empty() ? "" : ": " + excerpt(result.body));
      again = status == 429 || status >= 500;
    }
    if (!again || attempt == policy.retries) break;
    double wait = retry_after >= 0 ? std::min(retry_after, kMaxRetryAfter_s)
                                   : std::min(policy.backoff_s * std::pow(2.0, attempt), kMaxBackoff_s);
    if (wait >= seconds_left(policy.deadline)) {
      result.error = "advice time budget spent before the next attempt (last: " + result.error + ")";
      return result;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  if (result.attempts > 1) result.error += " (after " + std::to_string(result.attempts) + " attempts)";
  return result;
}

}  // namespace agentcompile::advisor
