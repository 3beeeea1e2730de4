// The batched GPU backend of `agentcompile serve --max-concurrency N` (N > 1): the compiled engine's
// decode_batch (Engine::decode_rows, EngineOptions::batch_slots = N), one call per step over every
// running sequence's rows (batched_sequences.h: decode rows first, then prompt chunks, at most
// kMaxBatchRows rows a step), each sequence in a KV slot of its own. Prompts are read through
// decode_batch too, in chunks that fill the step's rows, so a long prompt never stalls the others.
//
// Sampling is on the host from each sequence's row of logits (every request field honoured: penalties,
// log-probabilities). What it does not have yet: a CUDA graph per (batch, context) bucket (the step's
// kernels are launched one by one), sampling on the device, a prefill-sized prompt path.
#pragma once

#include <memory>

#include "agentcompile/engine.h"
#include "serve/backend.h"
#include "serve/batched_sequences.h"

namespace agentcompile::serve {

class EngineBatchBackend final : public Backend {
 public:
  // `engine` was loaded with batch_slots > 0.
  explicit EngineBatchBackend(std::unique_ptr<Engine> engine);

  const BackendInfo& info() const override { return info_; }
  Status add(SequenceId id, SequenceStart start) override { return sequences_.add(id, std::move(start)); }
  Expected<std::vector<StepOutput>> step() override;
  void drop(SequenceId id) override { sequences_.drop(id); }
  size_t size() const override { return sequences_.size(); }

 private:
  std::unique_ptr<Engine> engine_;
  BackendInfo info_;
  BatchedSequences sequences_;
};

}  // namespace agentcompile::serve
