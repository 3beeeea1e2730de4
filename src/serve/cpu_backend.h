// The CPU backend of `agentcompile serve --cpu`: the reference interpreter (fp32, ir/interpreter.h)
// serving several sequences with batched steps, so the server, its scheduler and its clients, and the
// batched decode that the GPU engine runs, are tested where there is no GPU.
//
// One interpreter holds the weights once and one KV cache of max_sequences slots of max_context rows
// each (slot s owns rows [s * max_context, (s + 1) * max_context) of every state). A step is ONE call of
// decode_batch (ir/decode_batch.h), derived from the model's decode by the same pass the compiler uses:
// its rows are every running sequence's next unit of work, each at its own position in its own slot —
// a sequence still reading its prompt contributes its next chunk of up to prefill_chunk tokens, every
// other sequence its last token. Each sequence takes the logits of its last row. The interpreter's rows
// do not depend on each other, so a sequence gets bit for bit the logits it gets alone. Sampling is on
// the host (sampling.h): every request field is honoured.
#pragma once

#include <filesystem>
#include <memory>

#include "frontend/model_source.h"
#include "ir/interpreter.h"
#include "serve/backend.h"
#include "serve/batched_sequences.h"

namespace agentcompile::serve {

struct CpuBackendOptions {
  std::filesystem::path model;   // .gguf file or HF checkpoint directory (weights needed)
  int64_t max_context = 2048;    // KV rows per sequence (a slot); at most the model's context
  int64_t max_sequences = 4;     // cache slots
  int64_t prefill_chunk = 256;   // prompt tokens a sequence reads per step
  int threads = 0;               // interpreter threads; 0: every core
};

class CpuBackend final : public Backend {
 public:
  // Opens the model, derives its decode_batch, checks that every slot's cache fits in host memory and
  // runs one token through it so that weights are loaded (and a broken model fails) before the first request.
  static Expected<std::unique_ptr<CpuBackend>> open(const CpuBackendOptions& options);
  ~CpuBackend() override;

  const BackendInfo& info() const override { return info_; }
  Status add(SequenceId id, SequenceStart start) override;
  Expected<std::vector<StepOutput>> step() override;
  void drop(SequenceId id) override;
  size_t size() const override { return sequences_->size(); }

 private:
  CpuBackend() = default;
  // One decode_batch call over a step's rows (batched_sequences.h); logits [rows, V].
  Expected<std::vector<float>> run_rows(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                        const std::vector<int32_t>& slots);

  CpuBackendOptions options_;
  BackendInfo info_;
  frontend::ModelSource source_;
  std::unique_ptr<ir::Interpreter> interpreter_;
  std::unique_ptr<BatchedSequences> sequences_;
};

}  // namespace agentcompile::serve
