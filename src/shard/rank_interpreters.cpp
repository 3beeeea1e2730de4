// N rank interpreters on N threads (see rank_interpreters.h).
#include "shard/rank_interpreters.h"

#include <optional>
#include <thread>

namespace agentcompile::shard {

namespace {

bool same(const ir::HostTensor& a, const ir::HostTensor& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.f32 == b.f32 && a.i32 == b.i32;
}

}  // namespace

RankInterpreters::RankInterpreters(const std::vector<ir::Module>& ranks, const ir::WeightLoader& loader,
                                   ir::InterpreterOptions options)
    : group_(std::make_unique<ir::InProcessGroup>(static_cast<int>(ranks.size()))) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    options.collective = &group_->member(static_cast<int>(r));
    interpreters_.push_back(std::make_unique<ir::Interpreter>(ranks[r], loader, options));
  }
}

RankInterpreters::~RankInterpreters() = default;

template <typename Result, typename Fn>
Expected<std::vector<Result>> RankInterpreters::on_every_rank(Fn fn) {
  std::vector<std::optional<Expected<Result>>> results(interpreters_.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < interpreters_.size(); ++r)
    threads.emplace_back([&, r] {
      results[r].emplace(fn(*interpreters_[r]));
      if (!results[r]->has_value()) group_->abort("rank " + std::to_string(r) + " failed: " + results[r]->status().message());
    });
  for (std::thread& thread : threads) thread.join();
  std::vector<Result> out;
  for (size_t r = 0; r < results.size(); ++r) {
    if (!results[r]->has_value()) return results[r]->status().with_context("rank " + std::to_string(r));
    out.push_back(std::move(*results[r]).value());
  }
  return out;
}

Expected<std::vector<ir::HostTensor>> RankInterpreters::run(const std::string& function, const std::vector<ir::HostTensor>& args) {
  AC_ASSIGN_OR_RETURN(auto per_rank, on_every_rank<std::vector<ir::HostTensor>>(
                                         [&](ir::Interpreter& interpreter) { return interpreter.run(function, args); }));
  for (size_t r = 1; r < per_rank.size(); ++r)
    for (size_t i = 0; i < per_rank[0].size(); ++i)
      if (i >= per_rank[r].size() || !same(per_rank[r][i], per_rank[0][i]))
        return error(ErrorCode::kMismatch, function + ": rank " + std::to_string(r) + "'s result " + std::to_string(i) +
                                               " differs from rank 0's; replicated values must agree");
  return std::move(per_rank[0]);
}

Expected<ir::Interpreter::Generation> RankInterpreters::generate_greedy(const std::vector<int32_t>& prompt, int new_tokens) {
  AC_ASSIGN_OR_RETURN(auto per_rank, on_every_rank<ir::Interpreter::Generation>([&](ir::Interpreter& interpreter) {
                        return interpreter.generate_greedy(prompt, new_tokens);
                      }));
  for (size_t r = 1; r < per_rank.size(); ++r)
    if (per_rank[r].tokens != per_rank[0].tokens || per_rank[r].logits != per_rank[0].logits)
      return error(ErrorCode::kMismatch, "generate_greedy: rank " + std::to_string(r) + " generated differently from rank 0");
  return std::move(per_rank[0]);
}

}  // namespace agentcompile::shard
