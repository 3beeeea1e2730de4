// The batched GPU backend of `agentcompile serve --max-concurrency N` (N > 1): the compiled engine's
// decode_rows (EngineOptions::batch_slots = N), each sequence in a KV slot of its own. A step is one call
// over every decoding sequence's token (decode_batch, or the decode step on the slot when one sequence
// decodes), then each prompt chunk a call of its own (prefill on the sequence's slot; up to the engine's
// prefill_chunk prompt tokens a step in all, so a burst of long prompts stalls the decoders one chunk a step).
//
// Greedy rows take their token from the device's argmax; other rows are sampled on the host from their
// logits row (every request field honoured: penalties, log-probabilities).
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
  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
  BackendInfo info_;
  BatchedSequences sequences_;
};

}  // namespace agentcompile::serve
