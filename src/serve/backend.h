// What the scheduler drives: a model that advances a set of sequences one step at a time.
//
// The scheduler adds a sequence (its prompt ids and sampling settings) at a step boundary, calls
// step() to advance every sequence it holds, and drops a sequence when it is done or its client has
// gone. One step advances each sequence by one unit of work: a sequence still reading its prompt reads
// its next chunk (and yields its first token when that chunk ends the prompt); every other sequence
// yields its next token. Sampling belongs to the backend, so a batched GPU backend can keep it on the
// device; its info() says which request fields it honours, and the server refuses the others with a
// 400 rather than ignoring them.
//
// Backends (all used from the scheduler's one thread):
//   CpuBackend (cpu_backend.h): the reference interpreter, any number of sequences, each in a slot of
//     one KV cache, advanced together by one decode_batch call per step.
//   EngineBackend (engine_backend.h): the compiled GPU engine's generate(), one sequence at a time.
//   EngineBatchBackend (engine_batch_backend.h): the engine's decode_batch, up to 16 sequences, each in
//     a KV slot, advanced together by one Engine::decode_rows call per step.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agentcompile/status.h"
#include "serve/sampling.h"

namespace agentcompile::serve {

using SequenceId = uint64_t;

struct BackendInfo {
  std::string name;             // for /health and logs: "cpu (reference interpreter)", "gpu (...)"
  int64_t max_sequences = 1;    // sequences step() advances at once
  int64_t max_context = 0;      // KV-cache rows of one sequence: prompt + generated tokens must fit
  int64_t vocab_size = 0;
  bool penalties = true;        // presence/frequency penalties honoured
  bool logprobs = true;         // log-probabilities honoured
  bool top_k = true;            // top-k honoured
};

struct SequenceStart {
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  int64_t max_new_tokens = 1;   // a backend may plan for it; the scheduler stops the sequence itself
};

struct StepOutput {
  SequenceId id = 0;
  Status status;                 // a failure of this sequence alone (the others go on)
  int32_t token = -1;
  TokenLogprob logprob;          // when the sequence asked for log-probabilities
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const BackendInfo& info() const = 0;
  // Takes a new sequence; at most info().max_sequences at once, prompt + max_new_tokens within the context.
  virtual Status add(SequenceId id, SequenceStart start) = 0;
  // Advances every sequence by one step; one output per sequence that produced a token or failed
  // (a failed sequence is dropped by the caller). An error here fails every sequence.
  virtual Expected<std::vector<StepOutput>> step() = 0;
  // Forgets a sequence and frees its cache slot; unknown ids are ignored.
  virtual void drop(SequenceId id) = 0;
  // Sequences held now.
  virtual size_t size() const = 0;
};

}  // namespace agentcompile::serve
