// The GPU backend of `agentcompile serve`: the compiled engine (include/agentcompile/engine.h).
//
// ONE SEQUENCE AT A TIME. The engine decodes one sequence with one KV cache, so this backend holds at
// most one sequence (max_sequences 1) and the scheduler queues the others. Batched decode (decode
// planned per batch bucket of 1..16 sequences, a KV slot per sequence, one CUDA graph per (batch,
// context) bucket) is the next step of issue 25 and will replace this backend, not the server.
//
// Engine::generate runs a whole sequence and hands tokens to a callback; this backend runs it on a
// worker thread and turns it into steps: the callback parks each token until step() takes it, so the
// scheduler sees one token per step and may drop the sequence at any step boundary (the callback then
// returns false and the engine stops). The engine's own decode loop keeps a few device steps queued
// ahead meanwhile, so the GPU does not wait on the handshake.
//
// Sampling is the engine's, on the device: temperature, top-k, top-p and the seed. It has no presence
// or frequency penalties and reports no log-probabilities, so info() says so and the server answers a
// request that asks for them with a 400.
//
// What it runs is one engine, or the ranks of a tensor-parallel model run as one (`serve
// --tensor-parallel N`: tools/tensor_parallel_run.h), behind the same generate call.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "agentcompile/engine.h"
#include "serve/backend.h"

namespace agentcompile::serve {

// A generator of one sequence at a time: Engine::generate's signature, called from one thread at a time.
struct SequenceEngine {
  EngineInfo info;
  std::function<Expected<GenerateResult>(std::span<const int32_t>, const GenerateOptions&, const TokenCallback&)> generate;
  std::shared_ptr<void> owner;  // what `generate` runs on, kept alive with the backend
};

class EngineBackend final : public Backend {
 public:
  explicit EngineBackend(std::unique_ptr<Engine> engine);
  explicit EngineBackend(SequenceEngine engine);
  ~EngineBackend() override;

  const BackendInfo& info() const override { return info_; }
  Status add(SequenceId id, SequenceStart start) override;
  Expected<std::vector<StepOutput>> step() override;
  void drop(SequenceId id) override;
  size_t size() const override { return active_ ? 1 : 0; }

 private:
  void generate(std::vector<int32_t> prompt, GenerateOptions options);

  SequenceEngine engine_;
  BackendInfo info_;
  std::optional<SequenceId> active_;
  std::thread worker_;

  // The handshake with the worker.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<int32_t> ready_;  // a token the engine produced and step() has not taken
  bool finished_ = false;         // generate() returned
  bool cancel_ = false;           // drop(): the callback returns false
  Status failure_;
  std::string stop_reason_;
};

}  // namespace agentcompile::serve
