// The HTTP side of `agentcompile serve` (cpp-httplib): routes, the API key, request logging, streaming
// and graceful shutdown.
//
//   GET  /                      the chat page
//   GET  /health                {"status": "ok" | "shutting down", ...}; 503 while shutting down
//   GET  /metrics               Prometheus text (metrics.h)
//   GET  /v1/models[/ID]        the one served model
//   POST /v1/chat/completions   chat (the model's chat template), streaming or not
//   POST /v1/completions        text or token ids as is, streaming or not
// Every refusal is OpenAI's error object (api_error.h), also for unknown routes and bodies that are
// too large. With an API key, /v1/* and /metrics need "Authorization: Bearer KEY" (401 otherwise);
// / and /health stay open.
//
// Both kinds of generation answer as a chunked response written while the tokens come, so a client
// that goes away is noticed (a failed write, or the socket found closed while waiting) and its
// sequence cancelled; the scheduler frees the slot at its next step boundary. A non-streaming answer
// is one JSON object; should generation fail after the 200 was sent (the backend failed, or shutdown
// ran out of time), the body is OpenAI's error object instead.
//
// Logging: one line per request (method, path, status, milliseconds, and for generations the token
// counts and finish reason). Prompts and completions appear only with log_requests; headers (the API
// key) never do.
//
// shutdown() (from a signal-handling thread): new generations get a 503, the ones in flight go on to
// their end for up to drain_timeout, then any left end with an error event; then the listener closes
// and serve() returns.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "agentcompile/status.h"
#include "serve/backend.h"
#include "serve/metrics.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port (port() says which)
  std::string model_id;                     // the name /v1/models lists and answers carry
  std::string api_key;                      // empty: no key needed
  bool log_requests = false;                // also log prompts and completions
  bool ignore_response_format = false;      // accept json_object / json_schema unenforced
  int64_t max_tokens = 0;                   // most tokens one request may generate; 0: up to the context
  int connection_threads = 256;             // connections served at once (idle ones included)
  size_t max_body_bytes = size_t{16} << 20;
  std::chrono::seconds drain_timeout{30};
  std::function<void(const std::string&)> log;  // one line each; empty: no log
};

class HttpServer {
 public:
  HttpServer(ServerOptions options, Scheduler& scheduler, const BackendInfo& backend, const tokenizer::Tokenizer& tokenizer,
             Metrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket (errors name the address).
  Status bind();
  int port() const;
  // Serves until shutdown() has finished; an error if the listener fails.
  Status serve();
  // Graceful shutdown; safe from any thread, once.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace agentcompile::serve
