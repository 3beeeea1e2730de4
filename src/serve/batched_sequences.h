// The sequences of a batched backend and the rows of each of its steps, shared by the CPU backend
// (the interpreter's decode_batch) and the GPU one (Engine::decode_rows): both run one decode_batch
// call per step (ir/decode_batch.h) and differ only in what runs it.
//
// Each sequence owns a KV slot. A step's rows are first every decoding sequence's last token, then, in
// the order the sequences came, the next prompt chunk of those still reading their prompt (up to
// prefill_chunk tokens each, and within max_rows rows for the whole step: a sequence left without
// rows waits a step). With prompts_apart, the decode rows are one call and each prompt chunk a call
// of its own (rows of one sequence, which the GPU engine runs through prefill on its slot), up to
// prefill_chunk prompt rows a step in all. A sequence samples the logits of its last row when that row
// ends its prompt or is a decode row; sampling is on the host (sampling.h), so every request field is
// honoured, except that a greedy row's token may come from the runner (RowNeed::kArgmax).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "agentcompile/engine.h"
#include "serve/backend.h"

namespace agentcompile::serve {

struct BatchLimits {
  int64_t slots = 1;           // KV slots: sequences at once
  int64_t context = 0;         // rows of one slot: prompt + generated tokens must fit
  int64_t prefill_chunk = 256; // prompt tokens a sequence reads per step
  int64_t max_rows = 0;        // rows of one call; 0: no limit
  int64_t vocab_size = 0;
  bool prompts_apart = false;  // each prompt chunk a call of its own (see above)
};

// Runs one step's rows: token ids, each row's position and its sequence's slot, and what sampling needs
// of each row (nothing for a prompt row before its chunk's last; the greedy token of a sequence whose
// sampler is greedy_only(); else the logits row). Returns those (Engine::decode_rows' DecodedRows; the
// logits in a buffer the sampler may modify).
using RowRunner = std::function<Expected<DecodedRows>(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                                      const std::vector<int32_t>& slots, const std::vector<RowNeed>& needs)>;

// What a runner that computes every row's logits [rows, vocab] returns: greedy_token of the kArgmax
// rows and the kLogits rows' logits.
DecodedRows rows_from_logits(std::vector<float> logits, int64_t vocab, const std::vector<RowNeed>& needs);

class BatchedSequences {
 public:
  explicit BatchedSequences(BatchLimits limits);

  // Takes a sequence into a free slot (errors as Backend::add).
  Status add(SequenceId id, SequenceStart start);
  // Frees the sequence's slot; unknown ids are ignored.
  void drop(SequenceId id);
  size_t size() const { return sequences_.size(); }
  // One step: every sequence's rows through `run`, one output per sequence that yields a token.
  Expected<std::vector<StepOutput>> step(const RowRunner& run);

 private:
  struct Sequence;
  // One call of the runner: its rows, and per sequence how many of them are its and whether its last
  // row yields a token (the last chunk of a prompt, or decode).
  struct Call {
    struct Take {
      SequenceId id;
      Sequence* sequence;
      size_t rows;
      bool yields;
    };
    std::vector<Take> takes;
    std::vector<int32_t> tokens, positions, slots;
    std::vector<RowNeed> needs;
    void add(SequenceId id, Sequence& sequence, std::span<const int32_t> ids, bool yields);
  };
  Status run_call(const Call& call, const RowRunner& run, std::vector<StepOutput>& outputs);

  struct Sequence {
    std::vector<int32_t> prompt;
    size_t read = 0;           // prompt tokens in the cache
    int64_t position = 0;      // tokens in the cache
    int32_t last = -1;         // the token the next decode row reads
    std::unique_ptr<HostSampler> sampler;
    int32_t slot = 0;
  };

  BatchLimits limits_;
  std::vector<int32_t> free_slots_;
  std::map<SequenceId, Sequence> sequences_;  // ordered: a step takes them in the order they came
};

}  // namespace agentcompile::serve
