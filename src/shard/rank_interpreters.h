// The reference interpreter over N rank modules (shard_module's output) in one process: one
// ir::Interpreter per rank on a thread of its own, their all_reduce / all_gather nodes meeting in an
// ir::InProcessGroup. Every call runs on all ranks at once; the ranks' results must agree (each rank
// computes the same replicated values), and rank 0's are returned. A rank that fails aborts the group,
// so the others return instead of waiting for it; the first error (by rank) is returned.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/collective.h"
#include "ir/interpreter.h"

namespace agentcompile::shard {

class RankInterpreters {
 public:
  // `loader` serves every rank: it gives whole checkpoint tensors (each interpreter cuts its ranges).
  // options.collective is set per rank; options.threads is per rank.
  RankInterpreters(const std::vector<ir::Module>& ranks, const ir::WeightLoader& loader, ir::InterpreterOptions options = {});
  ~RankInterpreters();

  int ranks() const { return static_cast<int>(interpreters_.size()); }
  ir::Interpreter& rank(int r) { return *interpreters_.at(static_cast<size_t>(r)); }

  Expected<std::vector<ir::HostTensor>> run(const std::string& function, const std::vector<ir::HostTensor>& args);
  Expected<ir::Interpreter::Generation> generate_greedy(const std::vector<int32_t>& prompt, int new_tokens);

 private:
  // Calls fn(r) for every rank on its own thread; aborts the group on the first failure.
  template <typename Result, typename Fn>
  Expected<std::vector<Result>> on_every_rank(Fn fn);

  std::unique_ptr<ir::InProcessGroup> group_;
  std::vector<std::unique_ptr<ir::Interpreter>> interpreters_;
};

}  // namespace agentcompile::shard
