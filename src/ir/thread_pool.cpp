// The interpreter's persistent thread pool: one job at a time, chunks claimed under a mutex.
#include "ir/thread_pool.h"

#include <algorithm>
#include <system_error>

namespace agentcompile::ir {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, kMaxThreads);
  // A host that refuses another thread (ulimit -u, memory for stacks) gets a smaller pool: results
  // do not depend on the thread count, and a constructor has no error to return.
  try {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
  } catch (const std::system_error&) {
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::drain() {
  for (;;) {
    int64_t begin;
    int64_t end;
    const std::function<void(int64_t, int64_t)>* job;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (next_ >= count_) return;
      begin = next_;
      end = std::min(count_, begin + chunk_);
      next_ = end;
      job = job_;
    }
    (*job)(begin, end);
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    drain();
    std::lock_guard<std::mutex> lock(mutex_);
    if (--busy_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (count <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (workers_.empty() || count <= grain) {
    fn(0, count);
    return;
  }
  // About four chunks per thread balances uneven chunks (causal attention rows) without much locking.
  const int64_t target_chunks = static_cast<int64_t>(size()) * 4;
  const int64_t chunk = std::max(grain, (count + target_chunks - 1) / target_chunks);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    count_ = count;
    chunk_ = chunk;
    next_ = 0;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  drain();
  // fn lives on the caller's stack: wait until no worker can still be running it.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
  job_ = nullptr;
}

}  // namespace agentcompile::ir
