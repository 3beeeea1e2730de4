// Routes, the API key, logging and shutdown over cpp-httplib (see http_server.h); the generation
// routes are in generation_route.cpp.
#include "serve/http_server.h"

#include <cstdio>
#include <thread>

#include "serve/chat_page.h"
#include "serve/http_server_impl.h"
#include "serve/response.h"

namespace agentcompile::serve {

namespace {

using json = nlohmann::ordered_json;

// The routes metrics are kept for; anything else is counted as "other", so a scanner cannot grow
// the label set without bound.
std::string metrics_route(const std::string& path) {
  for (const char* known : {"/", "/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/completions"})
    if (path == known) return path;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

// Compares in a time that depends on the key's length only, not on where the given text differs.
bool same_secret(std::string_view given, std::string_view key) {
  unsigned char difference = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) difference |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
  return difference == 0;
}

// A path as the log shows it: control characters escaped, so a request cannot write log lines.
std::string loggable(const std::string& path) {
  std::string out;
  for (unsigned char c : path.substr(0, 200)) {
    if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return path.size() > 200 ? out + "..." : out;
}

}  // namespace

thread_local RequestNote request_note;

void HttpServer::Impl::reply_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  res.set_content(json_text(error.to_json()), "application/json");
}

void HttpServer::Impl::log(const std::string& line) const {
  if (options.log) options.log(line);
}

bool HttpServer::Impl::authorized(const httplib::Request& req) const {
  if (options.api_key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  return header.size() > prefix.size() && header.compare(0, prefix.size(), prefix) == 0 &&
         same_secret(header.substr(prefix.size()), options.api_key);
}

json HttpServer::Impl::model_json() const {
  return {{"id", options.model_id}, {"object", "model"}, {"created", started_at}, {"owned_by", "agentcompile"},
          {"max_model_len", backend.max_context}};
}

void HttpServer::Impl::add_routes() {
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    request_note = RequestNote{std::chrono::steady_clock::now(), {}};
    const bool protected_route = req.path.rfind("/v1/", 0) == 0 || req.path == "/metrics";
    if (protected_route && !authorized(req)) {
      reply_error(res, unauthorized(req.has_header("Authorization") ? "Incorrect API key provided."
                                                                   : "You didn't provide an API key: send 'Authorization: Bearer KEY'."));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const Scheduler::Load load = scheduler.load();
    const bool stopping = load.draining || shutdown_started;
    res.status = stopping ? 503 : 200;
    res.set_content(json_text({{"status", stopping ? "shutting down" : "ok"},
                               {"model", options.model_id},
                               {"backend", backend.name},
                               {"running", load.running},
                               {"waiting", load.waiting}}),
                    "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    const Scheduler::Load load = scheduler.load();
    res.set_content(metrics.render(load.running, load.waiting), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(json_text({{"object", "list"}, {"data", json::array({model_json()})}}), "application/json");
  });
  http.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != options.model_id) return reply_error(res, not_found("The model '" + std::string(req.matches[1]) + "' does not exist."));
    res.set_content(json_text(model_json()), "application/json");
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(Route::kChat, req, res); });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(Route::kCompletion, req, res); });

  // Statuses httplib sets itself (no route, a body too large, a malformed request line) get an error
  // object too; responses that already carry one are left alone.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.has_header("Content-Type")) return httplib::Server::HandlerResponse::Unhandled;
    ApiError error = invalid_request(std::to_string(res.status) + " " + httplib::detail::status_message(res.status));
    error.status = res.status;
    if (res.status == 404) error = not_found("No route for " + req.method + " " + req.path + ".");
    if (res.status == 413) error.message = "The request body is larger than " + std::to_string(options.max_body_bytes) + " bytes.";
    reply_error(res, error);
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr exception) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(exception);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply_error(res, server_error("internal error: " + what));
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics.count_request(metrics_route(req.path), res.status);
    std::string line = loggable(req.method) + " " + loggable(req.path) + " " + std::to_string(res.status);
    if (request_note.start != std::chrono::steady_clock::time_point{}) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - request_note.start).count();
      line += " " + std::to_string(static_cast<long long>(ms)) + " ms";
    }
    if (!request_note.detail.empty()) line += " " + request_note.detail;
    request_note = RequestNote{};
    log(line);
  });
}

HttpServer::HttpServer(ServerOptions options, Scheduler& scheduler, const BackendInfo& backend, const tokenizer::Tokenizer& tokenizer,
                       Metrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), scheduler, backend, tokenizer, metrics)) {
  Impl& impl = *impl_;
  const int threads = std::max(impl.options.connection_threads, 4);
  impl.http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  impl.http.set_payload_max_length(impl.options.max_body_bytes);
  impl.http.set_keep_alive_timeout(5);
  impl.http.set_read_timeout(10, 0);
  impl.http.set_write_timeout(10, 0);
  impl.add_routes();
}

HttpServer::~HttpServer() = default;

Status HttpServer::bind() {
  Impl& impl = *impl_;
  if (impl.options.port == 0) {
    impl.port = impl.http.bind_to_any_port(impl.options.host);
    if (impl.port <= 0) return error(ErrorCode::kIo, "cannot listen on " + impl.options.host + " (any port)");
  } else {
    if (!impl.http.bind_to_port(impl.options.host, impl.options.port))
      return error(ErrorCode::kIo, "cannot listen on " + impl.options.host + ":" + std::to_string(impl.options.port) +
                                       " (in use, or not an address of this host)");
    impl.port = impl.options.port;
  }
  return Status::ok();
}

int HttpServer::port() const { return impl_->port; }

Status HttpServer::serve() {
  if (!impl_->http.listen_after_bind() && !impl_->shutdown_started)
    return error(ErrorCode::kIo, "the listener on " + impl_->options.host + ":" + std::to_string(impl_->port) + " failed");
  return Status::ok();
}

void HttpServer::shutdown() {
  Impl& impl = *impl_;
  if (impl.shutdown_started.exchange(true)) return;
  impl.scheduler.drain();
  std::unique_lock lock(impl.mutex);
  impl.log("shutting down: " + std::to_string(impl.in_flight) + " generations in flight, waiting up to " +
           std::to_string(impl.options.drain_timeout.count()) + " s for them");
  if (!impl.idle.wait_for(lock, impl.options.drain_timeout, [&] { return impl.in_flight == 0; })) {
    impl.log("shutting down: " + std::to_string(impl.in_flight) + " generations still running; ending them with an error");
    impl.scheduler.abort("the server is shutting down (its drain timeout ran out)");
    impl.idle.wait_for(lock, std::chrono::seconds(5), [&] { return impl.in_flight == 0; });
  }
  lock.unlock();
  // A signal right after bind() may come before serve() has started listening: stop() would find
  // nothing to stop and serve() would then run for ever.
  for (int i = 0; i < 500 && !impl.http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  impl.http.stop();
}

}  // namespace agentcompile::serve
