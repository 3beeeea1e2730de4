// The reference interpreter as a serving backend: one interpreter, a cache slot per sequence swapped
// in for its calls, chunked prompt reading, host sampling.
#include "serve/cpu_backend.h"

#include <algorithm>

#include "frontend/weight_formats.h"
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
  if (!module.find_function("prefill") || !module.find_function("decode"))
    return error(ErrorCode::kUnsupported, options.model.string() + ": the model has no prefill and decode functions");

  // Every slot's cache is allocated up front: a context the host cannot hold fails here, by name.
  ir::SymbolBindings bindings;
  bindings.L = options.max_context;
  uint64_t slot_bytes = 0;
  for (const ir::StateDecl& state : module.states) {
    uint64_t bytes = 0;
    if (!support::checked_bytes(bindings.resolve(state.type.shape), 4, bytes)) slot_bytes = UINT64_MAX;
    slot_bytes = slot_bytes > UINT64_MAX - bytes ? UINT64_MAX : slot_bytes + bytes;
    backend->state_names_.push_back(state.name);
  }
  uint64_t total = 0;
  if (!support::checked_bytes(static_cast<uint64_t>(options.max_sequences + 1), slot_bytes, total)) total = UINT64_MAX;
  AC_TRY(support::check_host_allocation(total, std::to_string(options.max_sequences) + " KV-cache slots of " +
                                                   support::byte_size_text(slot_bytes) + " (max_context " +
                                                   std::to_string(options.max_context) + ")"));
  for (int64_t s = 0; s < options.max_sequences; ++s) {
    Slot slot;
    for (const ir::StateDecl& state : module.states) {
      const std::vector<int64_t> shape = bindings.resolve(state.type.shape);
      int64_t elements = 1;
      for (int64_t d : shape) elements *= d;
      slot.states.emplace_back(static_cast<size_t>(elements), 0.f);
    }
    backend->slots_.push_back(std::move(slot));
    backend->free_slots_.push_back(static_cast<size_t>(options.max_sequences - 1 - s));  // slot 0 is taken first
  }

  const frontend::WeightStore* store = backend->source_.weights.get();
  const frontend::InterpreterLoaders loaders = frontend::interpreter_loaders(*store);
  backend->interpreter_ = std::make_unique<ir::Interpreter>(module, loaders.values, loaders.packed,
                                                            ir::InterpreterOptions{options.max_context, options.threads});
  // One token through prefill loads every weight now rather than in the first request.
  auto warm = backend->interpreter_->run("prefill", {ir::HostTensor::from_i32({1}, {0}), ir::HostTensor::scalar_i32(0)});
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
  // The slot's rows need no clearing: prefill writes from row 0 and attention reads only rows below
  // position + T, all of them written by the sequence that owns the slot then.
  free_slots_.push_back(it->second.slot);
  sequences_.erase(it);
}

Status CpuBackend::swap(Slot& slot) {
  for (size_t i = 0; i < state_names_.size(); ++i) AC_TRY(interpreter_->swap_state(state_names_[i], slot.states[i]));
  return Status::ok();
}

Expected<std::vector<float>> CpuBackend::run(Sequence& sequence, const std::string& function, std::vector<int32_t> tokens,
                                             int64_t position) {
  Slot& slot = slots_[sequence.slot];
  AC_TRY(swap(slot));
  const int64_t count = static_cast<int64_t>(tokens.size());
  auto outputs = interpreter_->run(function, {ir::HostTensor::from_i32({count}, std::move(tokens)),
                                              ir::HostTensor::scalar_i32(static_cast<int32_t>(position))});
  // The slot takes its cache back whatever happened, so the next sequence never runs on this one's rows.
  Status swapped_back = swap(slot);
  if (!outputs) return outputs.status();
  AC_TRY(swapped_back);
  if (outputs->empty() || (*outputs)[0].shape.size() != 2 || (*outputs)[0].shape[1] != info_.vocab_size)
    return error(ErrorCode::kMismatch, function + " must return float logits [rows, " + std::to_string(info_.vocab_size) + "] first");
  std::vector<float>& logits = (*outputs)[0].f32;  // [rows, V]
  return std::vector<float>(logits.end() - info_.vocab_size, logits.end());
}

Expected<std::vector<StepOutput>> CpuBackend::step() {
  std::vector<StepOutput> outputs;
  for (auto& [id, sequence] : sequences_) {
    Expected<std::vector<float>> logits = std::vector<float>{};
    if (sequence.read < sequence.prompt.size()) {
      const size_t chunk = std::min(sequence.prompt.size() - sequence.read, static_cast<size_t>(options_.prefill_chunk));
      std::vector<int32_t> tokens(sequence.prompt.begin() + static_cast<std::ptrdiff_t>(sequence.read),
                                  sequence.prompt.begin() + static_cast<std::ptrdiff_t>(sequence.read + chunk));
      logits = run(sequence, "prefill", std::move(tokens), sequence.position);
      if (logits) {
        sequence.read += chunk;
        sequence.position += static_cast<int64_t>(chunk);
        if (sequence.read < sequence.prompt.size()) continue;  // more of the prompt next step
      }
    } else {
      logits = run(sequence, "decode", {sequence.last}, sequence.position);
      if (logits) ++sequence.position;
    }
    StepOutput output;
    output.id = id;
    if (!logits) {
      output.status = logits.status().with_context("sequence " + std::to_string(id));
    } else {
      output.token = sequence.sampler->sample(*logits, &output.logprob);
      sequence.last = output.token;
    }
    outputs.push_back(std::move(output));
  }
  return outputs;
}

}  // namespace agentcompile::serve
