// Engine::generate on a worker thread, one token handed over per step (see engine_backend.h).
#include "serve/engine_backend.h"

namespace agentcompile::serve {

namespace {

SequenceEngine sequence_engine(std::unique_ptr<Engine> engine) {
  SequenceEngine out;
  out.info = engine->info();
  std::shared_ptr<Engine> shared(std::move(engine));
  out.generate = [raw = shared.get()](std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token) {
    return raw->generate(prompt, options, on_token);
  };
  out.owner = std::move(shared);
  return out;
}

}  // namespace

EngineBackend::EngineBackend(std::unique_ptr<Engine> engine) : EngineBackend(sequence_engine(std::move(engine))) {}

EngineBackend::EngineBackend(SequenceEngine engine) : engine_(std::move(engine)) {
  const EngineInfo& engine_info = engine_.info;
  info_.name = "gpu (" + engine_info.gpu + ", " + engine_info.dtype + ", one sequence at a time)";
  info_.max_sequences = 1;
  info_.max_context = engine_info.max_context;
  info_.vocab_size = engine_info.vocab_size;
  info_.penalties = false;
  info_.logprobs = false;
  info_.top_k = true;
}

EngineBackend::~EngineBackend() {
  if (active_) drop(*active_);
}

Status EngineBackend::add(SequenceId id, SequenceStart start) {
  if (active_) return error(ErrorCode::kResourceExhausted, "the GPU engine decodes one sequence at a time and one is running");
  if (start.sampling.penalized() || start.sampling.logprobs)
    return error(ErrorCode::kUnsupported, "the GPU engine's sampler has no presence/frequency penalties or log-probabilities");
  GenerateOptions options;
  options.max_new_tokens = start.max_new_tokens;
  options.stop_at_eos = false;  // the scheduler decides where a sequence ends (EOS, stop strings, limits)
  options.sampling.temperature = start.sampling.temperature;
  options.sampling.top_k = start.sampling.top_k;
  options.sampling.top_p = start.sampling.top_p;
  options.sampling.seed = start.sampling.seed;
  {
    std::lock_guard lock(mutex_);
    ready_.reset();
    finished_ = cancel_ = false;
    failure_ = Status::ok();
    stop_reason_.clear();
  }
  active_ = id;
  worker_ = std::thread(&EngineBackend::generate, this, std::move(start.prompt), options);
  return Status::ok();
}

void EngineBackend::generate(std::vector<int32_t> prompt, GenerateOptions options) {
  auto result = engine_.generate(prompt, options, [this](int32_t token) {
    std::unique_lock lock(mutex_);
    ready_ = token;
    changed_.notify_all();
    changed_.wait(lock, [this] { return !ready_ || cancel_; });
    return !cancel_;
  });
  std::lock_guard lock(mutex_);
  finished_ = true;
  if (!result) failure_ = result.status();
  else stop_reason_ = result->stop_reason;
  changed_.notify_all();
}

Expected<std::vector<StepOutput>> EngineBackend::step() {
  std::vector<StepOutput> outputs;
  if (!active_) return outputs;
  StepOutput output;
  output.id = *active_;
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return ready_.has_value() || finished_; });
  if (ready_) {
    output.token = *ready_;
    ready_.reset();
    changed_.notify_all();
  } else if (!failure_.is_ok()) {
    output.status = failure_;
  } else {
    // The scheduler stops a sequence at its max_new_tokens, so the engine never runs out first.
    output.status = error(ErrorCode::kInternal, "the engine ended the sequence (" + stop_reason_ + ") before the server did");
  }
  outputs.push_back(std::move(output));
  return outputs;
}

void EngineBackend::drop(SequenceId id) {
  if (!active_ || *active_ != id) return;
  {
    std::lock_guard lock(mutex_);
    cancel_ = true;
    changed_.notify_all();
  }
  worker_.join();  // generate() returns once the callback says stop (or on its own)
  active_.reset();
}

}  // namespace agentcompile::serve
