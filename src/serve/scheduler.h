// The request scheduler: one thread that owns the backend and advances it step by step.
//
// At each step boundary, in this order: sequences whose client went away are dropped (so a slot is
// free again within one step of the connection noticing), queued requests are admitted while the
// backend has room (first come, first served), and then one backend step advances every running
// sequence. Each token goes through the sequence's CompletionText (detokenization, stop strings,
// log-probabilities) and what may be sent goes to the request's GenerationStream. A sequence ends at
// an end-of-sequence token or a stop string ("stop") or at its max_tokens ("length").
//
// Requests beyond max_queue waiting are refused with a 429 at once; after drain() every new request
// gets a 503 while the queued and running ones go on to their end; abort() ends every one of them
// with an error event (a drain that ran out of time).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "serve/backend.h"
#include "serve/generation_stream.h"
#include "serve/metrics.h"
#include "tokenizer/tokenizer.h"

namespace agentcompile::serve {

struct GenerationJob {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_tokens = 1;
  std::vector<std::string> stop;
  bool ignore_eos = false;  // run to max_tokens (benchmarks)
};

struct SchedulerOptions {
  int64_t max_running = 1;   // sequences at once; at most the backend's max_sequences
  int64_t max_queue = 64;    // requests waiting beyond those
};

class Scheduler {
 public:
  // `eos_ids`: the tokens that end a sequence. Starts the scheduler's thread.
  Scheduler(Backend& backend, const tokenizer::Tokenizer& tokenizer, std::vector<int32_t> eos_ids, SchedulerOptions options,
            Metrics& metrics);
  // Ends every job (an error event to each) and joins the thread.
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job; its events arrive on the stream. 429 when the queue is full, 503 after drain().
  std::variant<std::shared_ptr<GenerationStream>, ApiError> submit(GenerationJob job);

  void drain();
  void abort(const std::string& reason);

  struct Load {
    size_t running = 0, waiting = 0;
    bool draining = false;
  };
  Load load() const;

 private:
  struct Waiting {
    SequenceId id;
    GenerationJob job;
    std::shared_ptr<GenerationStream> stream;
    std::chrono::steady_clock::time_point arrived;
  };
  struct Running {
    GenerationJob job;
    std::shared_ptr<GenerationStream> stream;
    std::unique_ptr<CompletionText> text;
    int64_t generated = 0;
    std::chrono::steady_clock::time_point arrived;
  };

  void loop();
  // The step boundary: cancellations, an abort, admissions. Called with the lock held.
  void at_boundary();
  void admit(Waiting waiting);
  // One step's token for a running sequence; true when the sequence has ended.
  bool take(SequenceId id, Running& running, const StepOutput& output);
  void finish(SequenceId id, Running& running, const std::string& reason, TextPiece tail);
  void fail(SequenceId id, Running& running, ApiError error);

  Backend& backend_;
  tokenizer::Tokenizer tokenizer_;
  std::vector<int32_t> eos_ids_;
  SchedulerOptions options_;
  Metrics& metrics_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Waiting> queue_;
  std::map<SequenceId, Running> running_;
  SequenceId next_id_ = 1;
  bool draining_ = false, stopping_ = false;
  std::optional<std::string> abort_reason_;
  std::thread thread_;
};

}  // namespace agentcompile::serve
