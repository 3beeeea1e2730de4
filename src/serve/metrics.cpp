// Counters and histograms in Prometheus' text exposition format.
#include "serve/metrics.h"

#include <cstdio>

namespace agentcompile::serve {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size(), 0) {}

void Histogram::observe(double value) {
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (value <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += value;
}

void Histogram::render(std::string& out, const std::string& name) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : step_seconds_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}),
      step_sequences_({1, 2, 4, 8, 16, 32}),
      first_token_seconds_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      queue_seconds_({0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60}) {}

void Metrics::count_request(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
}

void Metrics::count_tokens(int64_t prompt, int64_t completion) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(prompt);
  completion_tokens_ += static_cast<uint64_t>(completion);
}

void Metrics::count_disconnect() {
  std::lock_guard lock(mutex_);
  ++disconnects_;
}

void Metrics::observe_step(double seconds, size_t sequences) {
  std::lock_guard lock(mutex_);
  step_seconds_.observe(seconds);
  step_sequences_.observe(static_cast<double>(sequences));
}

void Metrics::observe_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  first_token_seconds_.observe(seconds);
}

void Metrics::observe_queue_wait(double seconds) {
  std::lock_guard lock(mutex_);
  queue_seconds_.observe(seconds);
}

std::string Metrics::render(size_t running, size_t waiting) const {
  std::lock_guard lock(mutex_);
  std::string out;
  const std::string p = "agentcompile_serve_";
  header(out, p + "requests_total", "counter", "HTTP requests answered, by route and status.");
  for (const auto& [key, count] : requests_)
    out += p + "requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  header(out, p + "prompt_tokens_total", "counter", "Prompt tokens of finished generations.");
  out += p + "prompt_tokens_total " + std::to_string(prompt_tokens_) + "\n";
  header(out, p + "completion_tokens_total", "counter", "Tokens generated.");
  out += p + "completion_tokens_total " + std::to_string(completion_tokens_) + "\n";
  header(out, p + "client_disconnects_total", "counter", "Generations cancelled because their client went away.");
  out += p + "client_disconnects_total " + std::to_string(disconnects_) + "\n";
  header(out, p + "requests_running", "gauge", "Sequences the backend holds now.");
  out += p + "requests_running " + std::to_string(running) + "\n";
  header(out, p + "requests_waiting", "gauge", "Requests queued for a free sequence slot.");
  out += p + "requests_waiting " + std::to_string(waiting) + "\n";
  header(out, p + "step_seconds", "histogram", "Wall time of one backend step.");
  step_seconds_.render(out, p + "step_seconds");
  header(out, p + "step_sequences", "histogram", "Sequences advanced by one backend step.");
  step_sequences_.render(out, p + "step_sequences");
  header(out, p + "time_to_first_token_seconds", "histogram", "From a request's arrival to its first token.");
  first_token_seconds_.render(out, p + "time_to_first_token_seconds");
  header(out, p + "queue_wait_seconds", "histogram", "Time a request waited for a sequence slot.");
  queue_seconds_.render(out, p + "queue_wait_seconds");
  return out;
}

}  // namespace agentcompile::serve
