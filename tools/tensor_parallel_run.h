// `run --tensor-parallel N` with N > 1: one engine per GPU, each on a thread of its own, generating
// the same prompt in lockstep (their all_reduce / all_gather meet in NCCL); rank 0's result is the run's.
#pragma once

#include <string>
#include <vector>

#include "agentcompile/engine.h"
#include "engine_flags.h"

namespace agentcompile::tools {

struct RanksResult {
  GenerateResult result;  // rank 0's
  std::string gpu;        // rank 0's GPU
  std::string all_reduce; // decode's all-reduce transport (EngineInfo::all_reduce), the same on every rank
};

// Fails the command (naming the rank) when a rank cannot load or generate, or when the ranks' tokens
// differ (they sample the same gathered logits, so they must not).
RanksResult generate_on_ranks(const EngineFlags& flags, const std::vector<int32_t>& prompt, const GenerateOptions& options, bool quiet);

}  // namespace agentcompile::tools
