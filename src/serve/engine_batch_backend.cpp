// The engine's decode_batch as a serving backend (see engine_batch_backend.h).
#include "serve/engine_batch_backend.h"

namespace agentcompile::serve {

namespace {

BatchLimits limits_of(const EngineInfo& info) {
  // Each prompt chunk a call of its own, which the engine runs through prefill on the sequence's slot.
  return BatchLimits{info.batch_slots, info.max_context, info.prefill_chunk, kMaxBatchRows, info.vocab_size, /*prompts_apart=*/true};
}

}  // namespace

EngineBatchBackend::EngineBatchBackend(std::unique_ptr<Engine> engine)
    : engine_(std::move(engine)), sequences_(limits_of(engine_->info())) {
  const EngineInfo& engine_info = engine_->info();
  info_.name = "gpu (" + engine_info.gpu + ", " + engine_info.dtype + ", decode_batch of up to " + std::to_string(engine_info.batch_slots) +
               " sequences)";
  info_.max_sequences = engine_info.batch_slots;
  info_.max_context = engine_info.max_context;
  info_.vocab_size = engine_info.vocab_size;
}

Expected<std::vector<StepOutput>> EngineBatchBackend::step() {
  return sequences_.step([this](const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions, const std::vector<int32_t>& slots,
                                 const std::vector<RowNeed>& needs) { return engine_->decode_rows(tokens, positions, slots, needs); });
}

}  // namespace agentcompile::serve
