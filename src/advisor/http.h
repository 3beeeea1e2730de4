// HTTP POST of a JSON body through libcurl, with the retry policy every HTTP backend shares:
// connect and per-attempt timeouts; on 429, 5xx, a timeout or a broken transfer (a body shorter than
// its Content-Length, a dropped connection) another attempt after an exponential backoff, or after
// the server's Retry-After; never past the deadline of the compile's advice budget. A server that
// cannot be reached at all (connection refused, unknown host) is not retried: it is reported as
// unreachable, and the advisor stops asking it. A response body over kMaxResponseBytes is cut off
// and reported as such.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace agentcompile::advisor {

struct HttpPolicy {
  double connect_timeout_s = 10;
  double request_timeout_s = 60;
  int retries = 3;                                  // attempts after the first
  double backoff_s = 0.5;                           // first wait; doubles per attempt, at most 8 s
  std::chrono::steady_clock::time_point deadline;   // no attempt or wait goes past it
};

// The largest response body read (an advice envelope is a few KiB).
inline constexpr size_t kMaxResponseBytes = size_t{4} << 20;

struct HttpResult {
  bool ok = false;      // a 2xx status with a complete body
  bool unreachable = false;  // no connection could be made (refused, host unknown): retrying will not help
  long status = 0;      // the last HTTP status; 0: no response
  std::string body;     // the last response body (at most kMaxResponseBytes)
  std::string error;    // why not ok; may contain server text: redact before recording
  int attempts = 0;
};

// `headers` are full header lines ("Authorization: Bearer ..."); they are never logged.
HttpResult post_json(const std::string& url, const std::vector<std::string>& headers, const std::string& body,
                     const HttpPolicy& policy);

}  // namespace agentcompile::advisor
