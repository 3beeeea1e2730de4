// The scheduler's loop: step boundaries (cancellations, abort, admissions), one backend step, tokens
// to text to streams (see scheduler.h).
#include "serve/scheduler.h"

#include <algorithm>

namespace agentcompile::serve {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Scheduler::Scheduler(Backend& backend, const tokenizer::Tokenizer& tokenizer, std::vector<int32_t> eos_ids, SchedulerOptions options,
                     Metrics& metrics)
    : backend_(backend), tokenizer_(tokenizer), eos_ids_(std::move(eos_ids)), options_(options), metrics_(metrics) {
  options_.max_running = std::clamp<int64_t>(options_.max_running, 1, backend_.info().max_sequences);
  thread_ = std::thread(&Scheduler::loop, this);
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (!abort_reason_) abort_reason_ = "the server is shutting down";
    wake_.notify_all();
  }
  thread_.join();
}

std::variant<std::shared_ptr<GenerationStream>, ApiError> Scheduler::submit(GenerationJob job) {
  std::lock_guard lock(mutex_);
  if (draining_ || stopping_) return unavailable("the server is shutting down and takes no new requests");
  // Requests that will find a free slot at the next boundary are not "waiting" for the limit's sake.
  const size_t free_slots = static_cast<size_t>(options_.max_running) - std::min(running_.size(), static_cast<size_t>(options_.max_running));
  if (queue_.size() >= free_slots + static_cast<size_t>(options_.max_queue))
    return too_many_requests("the server is at capacity: " + std::to_string(running_.size()) + " requests running and " +
                             std::to_string(queue_.size()) + " waiting (--max-queue " + std::to_string(options_.max_queue) +
                             "); retry later");
  auto stream = std::make_shared<GenerationStream>();
  queue_.push_back(Waiting{next_id_++, std::move(job), stream, std::chrono::steady_clock::now()});
  wake_.notify_all();
  return stream;
}

void Scheduler::drain() {
  std::lock_guard lock(mutex_);
  draining_ = true;
}

void Scheduler::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  abort_reason_ = reason;
  wake_.notify_all();
}

Scheduler::Load Scheduler::load() const {
  std::lock_guard lock(mutex_);
  return Load{running_.size(), queue_.size(), draining_};
}

void Scheduler::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    at_boundary();
    if (running_.empty()) {
      if (stopping_) return;
      wake_.wait(lock, [this] { return stopping_ || abort_reason_ || !queue_.empty(); });
      continue;
    }
    const size_t sequences = running_.size();
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Expected<std::vector<StepOutput>> outputs = backend_.step();
    metrics_.observe_step(seconds_since(start), sequences);
    lock.lock();
    if (!outputs) {
      const ApiError error = server_error("generation failed: " + outputs.status().to_string());
      while (!running_.empty()) fail(running_.begin()->first, running_.begin()->second, error);
      continue;
    }
    for (const StepOutput& output : *outputs) {
      auto it = running_.find(output.id);
      if (it == running_.end()) continue;
      if (take(output.id, it->second, output)) running_.erase(it);
    }
  }
}

void Scheduler::at_boundary() {
  if (abort_reason_) {
    const ApiError error = unavailable(*abort_reason_);
    while (!running_.empty()) fail(running_.begin()->first, running_.begin()->second, error);
    for (Waiting& waiting : queue_) waiting.stream->push(GenerationEvent{GenerationEvent::Kind::kError, {}, {}, {}, error});
    queue_.clear();
    abort_reason_.reset();
    return;
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (!it->second.stream->cancelled()) {
      ++it;
      continue;
    }
    backend_.drop(it->first);
    metrics_.count_disconnect();
    metrics_.count_tokens(static_cast<int64_t>(it->second.job.prompt.size()), it->second.generated);
    it = running_.erase(it);
  }
  std::erase_if(queue_, [this](const Waiting& waiting) {
    if (waiting.stream->cancelled()) metrics_.count_disconnect();
    return waiting.stream->cancelled();
  });
  while (!queue_.empty() && running_.size() < static_cast<size_t>(options_.max_running)) {
    Waiting waiting = std::move(queue_.front());
    queue_.pop_front();
    admit(std::move(waiting));
  }
}

void Scheduler::admit(Waiting waiting) {
  metrics_.observe_queue_wait(seconds_since(waiting.arrived));
  SequenceStart start{waiting.job.prompt, waiting.job.sampling, waiting.job.max_tokens};
  if (Status status = backend_.add(waiting.id, std::move(start)); !status) {
    // The server checks requests against the backend's limits before queueing them: this is a bug
    // or a backend that changed its mind, and the client hears why.
    waiting.stream->push(GenerationEvent{GenerationEvent::Kind::kError, {}, {}, {}, server_error(status.to_string())});
    return;
  }
  Running running;
  running.text = std::make_unique<CompletionText>(tokenizer_, waiting.job.stop);
  running.job = std::move(waiting.job);
  running.stream = std::move(waiting.stream);
  running.arrived = waiting.arrived;
  running_.emplace(waiting.id, std::move(running));
}

bool Scheduler::take(SequenceId id, Running& running, const StepOutput& output) {
  if (!output.status.is_ok()) {
    ApiError error = server_error("generation failed: " + output.status.to_string());
    backend_.drop(id);
    metrics_.count_tokens(static_cast<int64_t>(running.job.prompt.size()), running.generated);
    running.stream->push(GenerationEvent{GenerationEvent::Kind::kError, {}, {}, {}, std::move(error)});
    return true;
  }
  if (running.generated++ == 0) metrics_.observe_first_token(seconds_since(running.arrived));
  if (!running.job.ignore_eos && std::find(eos_ids_.begin(), eos_ids_.end(), output.token) != eos_ids_.end()) {
    finish(id, running, "stop", running.text->finish());
    return true;
  }
  std::optional<TokenLogprob> logprob;
  if (running.job.sampling.logprobs) logprob = output.logprob;
  TextPiece piece = running.text->push(output.token, std::move(logprob));
  if (running.text->stopped()) {
    TextPiece tail = running.text->finish();
    piece.text += tail.text;
    piece.logprobs.insert(piece.logprobs.end(), tail.logprobs.begin(), tail.logprobs.end());
    finish(id, running, "stop", std::move(piece));
    return true;
  }
  if (running.generated >= running.job.max_tokens) {
    TextPiece tail = running.text->finish();
    piece.text += tail.text;
    piece.logprobs.insert(piece.logprobs.end(), tail.logprobs.begin(), tail.logprobs.end());
    finish(id, running, "length", std::move(piece));
    return true;
  }
  if (!piece.empty()) running.stream->push(GenerationEvent{GenerationEvent::Kind::kText, std::move(piece), {}, {}, {}});
  return false;
}

void Scheduler::finish(SequenceId id, Running& running, const std::string& reason, TextPiece tail) {
  backend_.drop(id);
  const Usage usage{static_cast<int64_t>(running.job.prompt.size()), running.generated};
  metrics_.count_tokens(usage.prompt_tokens, usage.completion_tokens);
  running.stream->push(GenerationEvent{GenerationEvent::Kind::kDone, std::move(tail), reason, usage, {}});
}

void Scheduler::fail(SequenceId id, Running& running, ApiError error) {
  backend_.drop(id);
  metrics_.count_tokens(static_cast<int64_t>(running.job.prompt.size()), running.generated);
  running.stream->push(GenerationEvent{GenerationEvent::Kind::kError, {}, {}, {}, std::move(error)});
  running_.erase(id);
}

}  // namespace agentcompile::serve
