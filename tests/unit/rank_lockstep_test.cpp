// runtime/rank_lockstep.h: the other ranks stop at the token rank 0's callback stops at, however far
// ahead or behind of rank 0 their threads run, and rank 0 never waits for them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "runtime/rank_lockstep.h"

namespace agentcompile::runtime {
namespace {

// A rank's generate loop over `limit` tokens: asks `ask(i)` after each, stops at the first false.
// Returns how many tokens it produced.
template <typename Ask>
size_t generate(size_t limit, Ask ask) {
  size_t produced = 0;
  while (produced < limit) {
    ++produced;
    if (!ask(produced - 1)) break;
  }
  return produced;
}

TEST(RankLockstep, EveryRankStopsAtTheTokenRankZeroStopsAt) {
  constexpr size_t kStopAt = 37, kLimit = 100;
  RankLockstep lockstep;
  std::vector<size_t> produced(4);
  std::vector<std::thread> ranks;
  for (int r = 1; r < 4; ++r)
    ranks.emplace_back([&, r] {
      produced[static_cast<size_t>(r)] = generate(kLimit, [&](size_t i) {
        if (r == 2) std::this_thread::sleep_for(std::chrono::microseconds(50));  // a rank behind the others
        return lockstep.follow(i);
      });
    });
  produced[0] = generate(kLimit, [&](size_t i) { return lockstep.decide(i + 1 < kStopAt); });
  lockstep.leader_done();
  for (auto& rank : ranks) rank.join();
  for (size_t r = 0; r < 4; ++r) EXPECT_EQ(produced[r], kStopAt) << "rank " << r;
}

TEST(RankLockstep, RankZeroNeverWaitsForTheOthers) {
  RankLockstep lockstep;
  // No other rank has asked anything: rank 0 answers all its tokens alone.
  EXPECT_EQ(generate(50, [&](size_t) { return lockstep.decide(true); }), 50u);
  lockstep.leader_done();
  // A rank that comes later finds every answer, then rank 0's end.
  EXPECT_EQ(generate(60, [&](size_t i) { return lockstep.follow(i); }), 51u);
}

TEST(RankLockstep, ARankWaitingWhenRankZeroEndsIsReleased) {
  RankLockstep lockstep;
  std::atomic<bool> answered{false};
  bool answer = true;
  std::thread follower([&] {
    answer = lockstep.follow(0);  // rank 0 ends its request without answering token 0
    answered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(answered.load()) << "a rank must wait for rank 0's answer";
  lockstep.leader_done();
  follower.join();
  EXPECT_FALSE(answer);
}

}  // namespace
}  // namespace agentcompile::runtime
