// A batched backend's sequences and the rows of its steps (see batched_sequences.h).
#include "serve/batched_sequences.h"

#include <algorithm>
#include <span>

namespace agentcompile::serve {

BatchedSequences::BatchedSequences(BatchLimits limits) : limits_(limits) {
  for (int64_t s = limits_.slots - 1; s >= 0; --s) free_slots_.push_back(static_cast<int32_t>(s));  // slot 0 is taken first
}

Status BatchedSequences::add(SequenceId id, SequenceStart start) {
  if (sequences_.count(id)) return error(ErrorCode::kInvalidArgument, "sequence " + std::to_string(id) + " is already running");
  if (free_slots_.empty())
    return error(ErrorCode::kResourceExhausted, "all " + std::to_string(limits_.slots) + " cache slots are in use");
  if (start.prompt.empty()) return error(ErrorCode::kInvalidArgument, "the prompt is empty");
  const int64_t needed = static_cast<int64_t>(start.prompt.size()) + start.max_new_tokens - 1;
  if (needed > limits_.context)
    return error(ErrorCode::kResourceExhausted, std::to_string(start.prompt.size()) + " prompt tokens + " +
                                                    std::to_string(start.max_new_tokens) + " new tokens need " +
                                                    std::to_string(needed) + " cache rows, more than " +
                                                    std::to_string(limits_.context));
  for (int32_t token : start.prompt)
    if (token < 0 || token >= limits_.vocab_size)
      return error(ErrorCode::kInvalidArgument, "token id " + std::to_string(token) + " is outside the vocabulary");
  Sequence sequence;
  sequence.prompt = std::move(start.prompt);
  sequence.sampler = std::make_unique<HostSampler>(start.sampling);
  sequence.slot = free_slots_.back();
  free_slots_.pop_back();
  sequences_.emplace(id, std::move(sequence));
  return Status::ok();
}

void BatchedSequences::drop(SequenceId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return;
  // The slot's rows need no clearing: a sequence writes its rows from position 0 and attention reads only
  // rows up to its own position, all of them written by the sequence that owns the slot then.
  free_slots_.push_back(it->second.slot);
  sequences_.erase(it);
}

void BatchedSequences::Call::add(SequenceId id, Sequence& sequence, std::span<const int32_t> ids, bool yields) {
  for (size_t i = 0; i < ids.size(); ++i) {
    tokens.push_back(ids[i]);
    positions.push_back(static_cast<int32_t>(sequence.position + static_cast<int64_t>(i)));
    slots.push_back(sequence.slot);
    needs.push_back(!yields || i + 1 < ids.size() ? RowNeed::kNothing : sequence.sampler->greedy_only() ? RowNeed::kArgmax : RowNeed::kLogits);
  }
  takes.push_back(Take{id, &sequence, ids.size(), yields});
}

Expected<std::vector<StepOutput>> BatchedSequences::step(const RowRunner& run) {
  std::vector<Call> calls(1);
  // Decode rows first: a token per decoding sequence every step, whatever the prompts waiting.
  for (auto& [id, sequence] : sequences_) {
    if (sequence.read < sequence.prompt.size()) continue;
    calls.front().add(id, sequence, std::span<const int32_t>(&sequence.last, 1), true);
  }
  int64_t prompt_rows = 0;  // with prompts_apart: prompt rows of this step so far
  for (auto& [id, sequence] : sequences_) {
    if (sequence.read >= sequence.prompt.size()) continue;
    auto rows = static_cast<int64_t>(std::min(sequence.prompt.size() - sequence.read, static_cast<size_t>(limits_.prefill_chunk)));
    if (limits_.prompts_apart) {
      rows = std::min(rows, limits_.prefill_chunk - prompt_rows);
      prompt_rows += rows;
    } else if (limits_.max_rows > 0) {
      rows = std::min(rows, std::max<int64_t>(0, limits_.max_rows - static_cast<int64_t>(calls.front().tokens.size())));
    }
    if (rows <= 0) continue;  // no room left in this step
    if (limits_.prompts_apart) calls.emplace_back();
    const std::span<const int32_t> chunk(sequence.prompt.data() + sequence.read, static_cast<size_t>(rows));
    calls.back().add(id, sequence, chunk, sequence.read + static_cast<size_t>(rows) == sequence.prompt.size());
  }
  std::vector<StepOutput> outputs;
  for (const Call& call : calls)
    if (!call.takes.empty()) AC_TRY(run_call(call, run, outputs));
  return outputs;
}

Status BatchedSequences::run_call(const Call& call, const RowRunner& run, std::vector<StepOutput>& outputs) {
  const auto count = static_cast<int64_t>(call.tokens.size());
  AC_ASSIGN_OR_RETURN(DecodedRows decoded, run(call.tokens, call.positions, call.slots, call.needs));
  const int64_t V = limits_.vocab_size;
  const auto full_rows = static_cast<int64_t>(std::count(call.needs.begin(), call.needs.end(), RowNeed::kLogits));
  if (static_cast<int64_t>(decoded.logits.size()) != full_rows * V || static_cast<int64_t>(decoded.argmax.size()) != count)
    return error(ErrorCode::kMismatch, "a batched step of " + std::to_string(count) + " rows (" + std::to_string(full_rows) +
                                           " of them with logits) returned " + std::to_string(decoded.logits.size()) + " logits and " +
                                           std::to_string(decoded.argmax.size()) + " greedy tokens");
  int64_t row = 0, full = 0;
  for (const Call::Take& take : call.takes) {
    Sequence& sequence = *take.sequence;
    row += static_cast<int64_t>(take.rows);
    sequence.position += static_cast<int64_t>(take.rows);
    if (sequence.read < sequence.prompt.size()) sequence.read += take.rows;
    if (!take.yields) continue;  // more of the prompt next step
    StepOutput output;
    output.id = take.id;
    if (call.needs[static_cast<size_t>(row - 1)] == RowNeed::kArgmax) {
      const int32_t token = decoded.argmax[static_cast<size_t>(row - 1)];
      if (token < 0 || token >= V) return error(ErrorCode::kInternal, "row " + std::to_string(row - 1) + " has no greedy token");
      output.token = sequence.sampler->take(token);
    } else {
      output.token = sequence.sampler->sample(std::span<float>(decoded.logits.data() + full++ * V, static_cast<size_t>(V)), &output.logprob);
    }
    sequence.last = output.token;
    outputs.push_back(std::move(output));
  }
  return Status::ok();
}

DecodedRows rows_from_logits(std::vector<float> logits, int64_t vocab, const std::vector<RowNeed>& needs) {
  DecodedRows out;
  out.argmax.assign(needs.size(), -1);
  const auto V = static_cast<size_t>(vocab);
  size_t kept = 0;  // logits rows moved to the front, in row order
  for (size_t r = 0; r < needs.size(); ++r) {
    const std::span<const float> row(logits.data() + r * V, V);
    if (needs[r] == RowNeed::kArgmax) out.argmax[r] = greedy_token(row);
    if (needs[r] != RowNeed::kLogits) continue;
    if (kept != r) std::copy(row.begin(), row.end(), logits.begin() + static_cast<std::ptrdiff_t>(kept * V));
    ++kept;
  }
  logits.resize(kept * V);
  out.logits = std::move(logits);
  return out;
}

}  // namespace agentcompile::serve
