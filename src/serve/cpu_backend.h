// The CPU backend of `agentcompile serve --cpu`: the reference interpreter (fp32, ir/interpreter.h)
// serving several sequences, so the server, its scheduler and its clients are tested where there is
// no GPU.
//
// One interpreter holds the weights once; each sequence owns a cache slot (every KV state of the
// module, max_context rows) that is swapped into the interpreter for the sequence's calls
// (Interpreter::swap_state exchanges buffers, no copy). Within a step the sequences run one after
// another, each call using every thread: the CPU gains no throughput from concurrency, but the server
// behaves as it will with batched GPU decode. A sequence reads its prompt in chunks of prefill_chunk
// tokens, one chunk per step, so a long prompt does not stall the others' tokens. Sampling is on the
// host (sampling.h): every request field is honoured.
#pragma once

#include <filesystem>
#include <map>
#include <memory>

#include "frontend/model_source.h"
#include "ir/interpreter.h"
#include "serve/backend.h"

namespace agentcompile::serve {

struct CpuBackendOptions {
  std::filesystem::path model;   // .gguf file or HF checkpoint directory (weights needed)
  int64_t max_context = 2048;    // KV rows per sequence; at most the model's context
  int64_t max_sequences = 4;     // cache slots
  int64_t prefill_chunk = 256;   // prompt tokens a sequence reads per step
  int threads = 0;               // interpreter threads; 0: every core
};

class CpuBackend final : public Backend {
 public:
  // Opens the model, checks that every slot's cache fits in host memory and runs one token through
  // prefill so that weights are loaded (and a broken model fails) before the first request.
  static Expected<std::unique_ptr<CpuBackend>> open(const CpuBackendOptions& options);
  ~CpuBackend() override;

  const BackendInfo& info() const override { return info_; }
  Status add(SequenceId id, SequenceStart start) override;
  Expected<std::vector<StepOutput>> step() override;
  void drop(SequenceId id) override;
  size_t size() const override { return sequences_.size(); }

 private:
  struct Slot {
    std::vector<std::vector<float>> states;  // one buffer per module state, [max_context, KV, D] each
  };
  struct Sequence {
    std::vector<int32_t> prompt;
    size_t read = 0;           // prompt tokens in the cache
    int64_t position = 0;      // tokens in the cache
    int32_t last = -1;         // the token the next decode call reads
    std::unique_ptr<HostSampler> sampler;
    size_t slot = 0;
  };

  CpuBackend() = default;
  // Runs one call of `function` for `sequence` with its cache swapped in; returns the last row's logits.
  Expected<std::vector<float>> run(Sequence& sequence, const std::string& function, std::vector<int32_t> tokens, int64_t position);
  Status swap(Slot& slot);

  CpuBackendOptions options_;
  BackendInfo info_;
  frontend::ModelSource source_;
  std::unique_ptr<ir::Interpreter> interpreter_;
  std::vector<std::string> state_names_;
  std::vector<Slot> slots_;
  std::vector<size_t> free_slots_;
  std::map<SequenceId, Sequence> sequences_;  // ordered: a step runs them in the order they came
};

}  // namespace agentcompile::serve
