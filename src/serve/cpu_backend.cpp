// The reference interpreter as a serving backend: one interpreter, a cache of slots, one decode_batch
// call per step over every sequence's rows (prompt chunks and decode tokens alike), host sampling.
#include "serve/cpu_backend.h"

#include <algorithm>
#include <limits>

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
  backend->sequences_ = std::make_unique<BatchedSequences>(
      BatchLimits{options.max_sequences, options.max_context, options.prefill_chunk, /*max_rows=*/0, info.vocab_size});
  return backend;
}

CpuBackend::~CpuBackend() = default;

Status CpuBackend::add(SequenceId id, SequenceStart start) { return sequences_->add(id, std::move(start)); }

void CpuBackend::drop(SequenceId id) { sequences_->drop(id); }

Expected<std::vector<StepOutput>> CpuBackend::step() {
  return sequences_->step([this](const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions, const std::vector<int32_t>& slots,
                                  const std::vector<RowNeed>& needs) -> Expected<DecodedRows> {
    AC_ASSIGN_OR_RETURN(std::vector<float> logits, run_rows(tokens, positions, slots));
    return rows_from_logits(std::move(logits), info_.vocab_size, needs);
  });
}

Expected<std::vector<float>> CpuBackend::run_rows(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                                  const std::vector<int32_t>& slots) {
  const auto count = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> bases;  // slot s owns cache rows [s * max_context, (s + 1) * max_context)
  for (int32_t slot : slots) bases.push_back(static_cast<int32_t>(slot * options_.max_context));
  auto result = interpreter_->run(ir::kDecodeBatchFunction, {ir::HostTensor::from_i32({count}, tokens),
                                                             ir::HostTensor::from_i32({count}, positions),
                                                             ir::HostTensor::from_i32({count}, std::move(bases))});
  if (!result) return result.status().with_context("a batched step of " + std::to_string(count) + " rows");
  if (result->empty() || (*result)[0].shape != std::vector<int64_t>{count, info_.vocab_size})
    return error(ErrorCode::kMismatch, std::string(ir::kDecodeBatchFunction) + " must return float logits [" +
                                           std::to_string(count) + ", " + std::to_string(info_.vocab_size) + "] first");
  return std::move((*result)[0].f32);
}

}  // namespace agentcompile::serve
