// A persistent pool of worker threads for the reference interpreter's data-parallel kernels.
//
// Threads are started once (per Interpreter) because a decode step issues a few hundred parallel
// loops; starting threads per loop would cost more than the loops themselves. The calling thread
// takes part in every loop, so a pool of size 1 has no workers and runs everything inline.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace agentcompile::ir {

class ThreadPool {
 public:
  // The most threads a pool starts; more never pay off for the interpreter's loops.
  static constexpr int kMaxThreads = 1024;

  // `threads` counts the caller; 0 means std::thread::hardware_concurrency(). At most kMaxThreads
  // are used, and fewer when the host refuses to start more.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over chunks of [0, count) of at least `grain` items each, on the workers and
  // the caller, and returns when every chunk is done. Not reentrant: fn must not call parallel_for.
  void parallel_for(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop();
  // Claims and runs chunks of the current job until none are left.
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  uint64_t generation_ = 0;  // bumped per job so a worker never runs one job twice
  bool stopping_ = false;
  int busy_ = 0;  // workers still inside the current job

  // The current job; written under mutex_ before generation_ changes.
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t count_ = 0;
  int64_t chunk_ = 1;
  int64_t next_ = 0;  // next unclaimed item, guarded by mutex_ (chunks are coarse, so contention is low)
};

}  // namespace agentcompile::ir
