// Rank 0's stop answers handed to the other ranks (see rank_lockstep.h).
#include "runtime/rank_lockstep.h"

namespace agentcompile::runtime {

bool RankLockstep::decide(bool go) {
  std::lock_guard lock(mutex_);
  answers_.push_back(go);
  changed_.notify_all();
  return go;
}

bool RankLockstep::follow(size_t index) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return answers_.size() > index || done_; });
  return answers_.size() > index && answers_[index];
}

void RankLockstep::leader_done() {
  std::lock_guard lock(mutex_);
  done_ = true;
  changed_.notify_all();
}

}  // namespace agentcompile::runtime
