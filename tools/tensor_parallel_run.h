// `run` and `bench` with --tensor-parallel N > 1: one engine per GPU, each loaded on a thread of its
// own (their NCCL communicators meet in ncclCommInitRank), and every request run on all of them at once,
// one thread per rank, in lockstep (their all_reduce / all_gather meet in NCCL). Rank 0's result is the
// request's.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agentcompile/engine.h"
#include "engine_flags.h"

namespace agentcompile::tools {

class RankEngines {
 public:
  // Artifacts first (--artifact DIR/rank<r>, or each rank's own compiled on first use, before this
  // process touches a GPU), then every rank's engine at once. A rank that cannot load ends the process
  // with its error: the other ranks may be waiting for it in NCCL, where nothing can reach them.
  static std::unique_ptr<RankEngines> load_or_fail(const EngineFlags& flags, bool quiet);
  ~RankEngines();  // the ranks' engines are released together, each on a thread of its own

  // Every rank generates the request; `on_token` sees rank 0's tokens and decides for every rank where
  // the request stops (runtime/rank_lockstep.h). A rank that fails ends the process (the others may wait
  // for it in a collective); ranks whose tokens differ (they sample the same gathered logits, so they
  // must not) are an error.
  Expected<GenerateResult> generate(std::span<const int32_t> prompt, const GenerateOptions& options, const TokenCallback& on_token = {});
  // The same, failing the command on an error.
  GenerateResult generate_or_fail(const std::vector<int32_t>& prompt, const GenerateOptions& options);

  const EngineInfo& info() const { return engines_.front()->info(); }  // rank 0's
  std::string gpu() const;  // rank 0's GPU and the rank count: "NVIDIA H200 x2"
  int ranks() const { return static_cast<int>(engines_.size()); }

 private:
  std::vector<std::unique_ptr<Engine>> engines_;
};

}  // namespace agentcompile::tools
