// The state behind HttpServer, shared by its two source files (http_server.cpp: routes, key, log,
// shutdown; generation_route.cpp: the completion routes). The only place that includes cpp-httplib.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

// poll() instead of select(): select() cannot watch a socket numbered past 1023, and a server with
// hundreds of idle connections gets there.
#define CPPHTTPLIB_USE_POLL
#include "httplib.h"

#include <nlohmann/json.hpp>

#include "serve/http_server.h"
#include "serve/request.h"

namespace agentcompile::serve {

// What the log line of the request being answered on this connection's thread says beyond its
// status: set when routing starts and by the generation routes, read by the logger (which httplib
// calls on the same thread once the response is written).
struct RequestNote {
  std::chrono::steady_clock::time_point start;
  std::string detail;
};
extern thread_local RequestNote request_note;

struct HttpServer::Impl {
  Impl(ServerOptions o, Scheduler& s, const BackendInfo& b, const tokenizer::Tokenizer& t, Metrics& m)
      : options(std::move(o)),
        scheduler(s),
        backend(b),
        tokenizer(t),
        metrics(m),
        started_at(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()) {}

  void add_routes();
  void reply_error(httplib::Response& res, const ApiError& error);
  void log(const std::string& line) const;
  bool authorized(const httplib::Request& req) const;
  nlohmann::ordered_json model_json() const;
  // POST /v1/chat/completions and /v1/completions (generation_route.cpp).
  void generate(Route route, const httplib::Request& req, httplib::Response& res);

  ServerOptions options;
  Scheduler& scheduler;
  BackendInfo backend;
  tokenizer::Tokenizer tokenizer;
  Metrics& metrics;
  int64_t started_at = 0;
  int port = 0;
  httplib::Server http;

  // Generations whose response is still being written; shutdown waits for none.
  std::mutex mutex;
  std::condition_variable idle;
  int in_flight = 0;
  std::atomic<bool> shutdown_started{false};
  std::atomic<uint64_t> next_request{1};  // numbers requests in the log
};

}  // namespace agentcompile::serve
