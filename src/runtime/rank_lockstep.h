// The stop decision of tensor-parallel ranks that generate one request together.
//
// The ranks produce the same tokens (they sample the same gathered logits), but each rank's engine asks
// its own token callback whether to go on. Only rank 0's callback is the caller's (a server's stop
// strings, a client gone); every other rank must stop at the very same token, or it would wait in its
// next collective for a rank that is no longer there. RankLockstep hands rank 0's answer for each
// token to the others: a rank > 0 waits for it, rank 0 never waits for anyone (so the handshake cannot
// deadlock against the collectives: rank 0 answers for token i before it needs the others' step i+1).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

namespace agentcompile::runtime {

class RankLockstep {
 public:
  // Rank 0's callback: records `go` as the answer for its next token and returns it.
  bool decide(bool go);
  // Rank r > 0's answer for its token `index` (from 0): rank 0's, once given; false where rank 0 ended
  // its request before answering that token (it stopped on its own, so the others stop there too).
  bool follow(size_t index);
  // Rank 0's request returned (however it ended): every rank still waiting for an answer gets false.
  void leader_done();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> answers_;
  bool done_ = false;
};

}  // namespace agentcompile::runtime
