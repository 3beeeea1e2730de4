// The reference interpreter as a serving backend: one interpreter, a cache of slots, one decode_batch
// call per step over every sequence's rows (prompt chunks and decode tokens alike), host sampling.
#include "serve/cpu_backend.h"

#include <algorithm>
#include <limits>
#include <span>

#include "frontend/weight_formats.h"
#include "ir/decode_batch.h"
#include "ir/verifier.h"
#include "support/host_limits.h"

namespace agentcompile::serve {

Expected<std::unique_ptr<CpuBackend>> CpuBackend::open(const CpuBackendOptions& options) {
  if (options.max_sequences < 1) return error(ErrorCode::kInvalidArgument, "max_sequences must be at least 1");
  if (options.prefill_chunk < 1) return error(ErrorCode::kInvalidArgument, "prefill_chunk must be at least 1");
  std::unique_ptr<CpuBackend> backend(new CpuBackend());
  backend->options_ = options;
  AC_ASSIGN_OR_RETURN(backend->source_, frontend::open_model(options.model, /*with_weights=*/true));
  const frontend::ModelSource& source = backend->source_;
  if (!source.is_language_model())
    return error(ErrorCode::kUnsupported, options.model.string() + " is a captured module, not a language model: nothing to serve");
  const int64_t model_context = source.config.max_position_embeddings;
  if (options.max_context < 1 || options.max_context > model_context)
    return error(ErrorCode::kInvalidArgument, "max_context " + std::to_string(options.max_context) + " is outside 1.." +
                                                  std::to_string(model_context) + " (the model's context)");
  // The source's own module, as `agentcompile reference` runs it: nothing of the compiler's is trusted.
  AC_ASSIGN_OR_RETURN(ir::Module module, frontend::source_module(source));
  AC_TRY(ir::verify_module(module));
  if (!module.find_function("decode"))
    return error(ErrorCode::kUnsupported, options.model.string() + ": the model has no decode function");
  AC_TRY(ir::add_decode_batch(module).with_context(options.model.string() + ": batching its decode for serving"));

  // The cache of every slot is allocated up front: a context the host cannot hold fails here, by name.
  uint64_t rows = 0;
  if (!support::checked_bytes(static_cast<uint64_t>(options.max_sequences), static_cast<uint64_t>(options.max_context), rows) ||
      rows > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return error(ErrorCode::kInvalidArgument, std::to_string(options.max_sequences) + " slots of " +
                                                  std::to_string(options.max_context) + " rows overflow the cache's i32 row index");
  ir::SymbolBindings bindings;
  bindings.L = static_cast<int64_t>(rows);
  uint64_t total = 0;
  for (const ir::StateDecl& state : module.states) {
    uint64_t bytes = 0;
    if (!support::checked_bytes(bindings.resolve(state.type.shape), 4, bytes)) total = UINT64_MAX;
    total = total > UINT64_MAX - bytes ? UINT64_MAX : total + bytes;
  }
  AC_TRY(support::check_host_allocation(total, std::to_string(options.max_sequences) + " KV-cache slots of " +
                                                   std::to_string(options.max_context) + " rows (" +
                                                   support::byte_size_text(total) + ")"));
  for (int64_t s = options.max_sequences - 1; s >= 0; --s) backend->free_slots_.push_back(s);  // slot 0 is taken first

  const frontend::WeightStore* store = backend->source_.weights.get();
  const frontend::InterpreterLoaders loaders = frontend::interpreter_loaders(*store);
  backend->interpreter_ = std::make_unique<ir::Interpreter>(module, loaders.values, loaders.packed,
                                                            ir::InterpreterOptions{bindings.L, options.threads});
  // One token through decode_batch loads every weight now rather than in the first request.
  auto one = ir::HostTensor::from_i32({1}, {0});
  auto warm = backend->interpreter_->run(ir::kDecodeBatchFunction, {one, one, one});
  if (!warm) return warm.status().with_context("loading " + options.model.string() + " on the CPU");

  BackendInfo& info = backend->info_;
  info.name = "cpu (reference interpreter, fp32)";
  info.max_sequences = options.max_sequences;
  info.max_context = options.max_context;
  info.vocab_size = source.config.vocab_size;
  return backend;
}

CpuBackend::~CpuBackend() = default;

Status CpuBackend::add(SequenceId id, SequenceStart start) {
  if (sequences_.count(id)) return error(ErrorCode::kInvalidArgument, "sequence " + std::to_string(id) + " is already running");
  if (free_slots_.empty())
    return error(ErrorCode::kResourceExhausted, "all " + std::to_string(options_.max_sequences) + " cache slots are in use");
  if (start.prompt.empty()) return error(ErrorCode::kInvalidArgument, "the prompt is empty");
  const int64_t needed = static_cast<int64_t>(start.prompt.size()) + start.max_new_tokens - 1;
  if (needed > options_.max_context)
    return error(ErrorCode::kResourceExhausted, std::to_string(start.prompt.size()) + " prompt tokens + " +
                                                    std::to_string(start.max_new_tokens) + " new tokens need " +
                                                    std::to_string(needed) + " cache rows, more than " +
                                                    std::to_string(options_.max_context));
  for (int32_t token : start.prompt)
    if (token < 0 || token >= info_.vocab_size)
      return error(ErrorCode::kInvalidArgument, "token id " + std::to_string(token) + " is outside the vocabulary");
  Sequence sequence;
  sequence.prompt = std::move(start.prompt);
  sequence.sampler = std::make_unique<HostSampler>(start.sampling);
  sequence.slot = free_slots_.back();
  free_slots_.pop_back();
  sequences_.emplace(id, std::move(sequence));
  return Status::ok();
}

void CpuBackend::drop(SequenceId id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return;
  // The slot's rows need no clearing: a sequence writes its rows from position 0 and attention reads only
  // rows up to its own position, all of them written by the sequence that owns the slot then.
  free_slots_.push_back(it->second.slot);
  sequences_.erase(it);
}

Expected<std::vector<StepOutput>> CpuBackend::step() {
  // Every sequence's rows of this step: its next prompt chunk, or its last token.
  std::vector<int32_t> tokens, positions, bases;
  struct Take {
    SequenceId id;
    Sequence* sequence;
    size_t rows;      // rows of this step
    bool yields;      // its last row's logits give a token (the last chunk of a prompt, or decode)
  };
  std::vector<Take> takes;
  for (auto& [id, sequence] : sequences_) {
    const auto base = static_cast<int32_t>(sequence.slot * options_.max_context);
    size_t rows = 1;
    bool yields = true;
    if (sequence.read < sequence.prompt.size()) {
      rows = std::min(sequence.prompt.size() - sequence.read, static_cast<size_t>(options_.prefill_chunk));
      yields = sequence.read + rows == sequence.prompt.size();
      for (size_t i = 0; i < rows; ++i) tokens.push_back(sequence.prompt[sequence.read + i]);
    } else {
      tokens.push_back(sequence.last);
    }
    for (size_t i = 0; i < rows; ++i) {
      positions.push_back(static_cast<int32_t>(sequence.position + static_cast<int64_t>(i)));
      bases.push_back(base);
    }
    takes.push_back(Take{id, &sequence, rows, yields});
  }
  std::vector<StepOutput> outputs;
  if (takes.empty()) return outputs;

  const auto count = static_cast<int64_t>(tokens.size());
  auto result = interpreter_->run(ir::kDecodeBatchFunction, {ir::HostTensor::from_i32({count}, std::move(tokens)),
                                                             ir::HostTensor::from_i32({count}, std::move(positions)),
                                                             ir::HostTensor::from_i32({count}, std::move(bases))});
  if (!result) return result.status().with_context("a batched step of " + std::to_string(takes.size()) + " sequences");
  const int64_t V = info_.vocab_size;
  if (result->empty() || (*result)[0].shape != std::vector<int64_t>{count, V})
    return error(ErrorCode::kMismatch, std::string(ir::kDecodeBatchFunction) + " must return float logits [" +
                                           std::to_string(count) + ", " + std::to_string(V) + "] first");
  std::vector<float>& logits = (*result)[0].f32;  // [rows, V]; each sequence's sampler works in its last row
  int64_t row = 0;
  for (const Take& take : takes) {
    Sequence& sequence = *take.sequence;
    row += static_cast<int64_t>(take.rows);
    sequence.position += static_cast<int64_t>(take.rows);
    if (sequence.read < sequence.prompt.size()) sequence.read += take.rows;
    if (!take.yields) continue;  // more of the prompt next step
    StepOutput output;
    output.id = take.id;
    output.token = sequence.sampler->sample(std::span<float>(logits.data() + (row - 1) * V, static_cast<size_t>(V)), &output.logprob);
    sequence.last = output.token;
    outputs.push_back(std::move(output));
  }
  return outputs;
}

}  // namespace agentcompile::serve
