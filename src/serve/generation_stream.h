// The channel between the scheduler, which produces a request's text as tokens come, and the
// connection that answers the request: text pieces, then either the end (finish reason and usage) or
// an error. The connection may cancel (its client went away); the scheduler then drops the sequence
// at its next step boundary.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "serve/api_error.h"
#include "serve/completion_text.h"

namespace agentcompile::serve {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

struct GenerationEvent {
  enum class Kind { kText, kDone, kError };
  Kind kind = Kind::kText;
  TextPiece piece;            // kText; kDone: the last of the text, possibly empty
  std::string finish_reason;  // kDone: "stop" (end of sequence or a stop string) or "length"
  Usage usage;                // kDone
  ApiError error;             // kError
};

class GenerationStream {
 public:
  void push(GenerationEvent event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
    arrived_.notify_all();
  }

  // Moves the events that have arrived into `out`, waiting up to `timeout` for the first one.
  void wait(std::vector<GenerationEvent>& out, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, timeout, [this] { return !events_.empty(); });
    while (!events_.empty()) {
      out.push_back(std::move(events_.front()));
      events_.pop_front();
    }
  }

  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<GenerationEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace agentcompile::serve
