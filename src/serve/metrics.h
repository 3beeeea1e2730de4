// The server's counters, served at /metrics in Prometheus' text format (version 0.0.4): requests by
// route and status, prompt and completion tokens, requests running and waiting, client disconnects,
// and histograms of step time, sequences per step, time to first token and time spent queued.
// Thread-safe: connections and the scheduler's thread record into one Metrics.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace agentcompile::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // The _bucket, _sum and _count lines of `name`.
  void render(std::string& out, const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bound, not cumulative; rendered cumulatively
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
 public:
  Metrics();

  void count_request(const std::string& route, int status);
  void count_tokens(int64_t prompt, int64_t completion);
  void count_disconnect();
  void observe_step(double seconds, size_t sequences);
  void observe_first_token(double seconds);
  void observe_queue_wait(double seconds);

  // The exposition text, with the scheduler's current load.
  std::string render(size_t running, size_t waiting) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, disconnects_ = 0;
  Histogram step_seconds_, step_sequences_, first_token_seconds_, queue_seconds_;
};

}  // namespace agentcompile::serve
