// Collectives for the reference interpreter: what all_reduce and all_gather (ir/ops.h) call, and an
// in-process group that lets one process run the N rank modules of a sharded model (src/shard) as N
// threads, each with its own interpreter.
//
// Every rank computes a sum in rank order (0, 1, ..., N-1, in float), so all ranks hold bit-identical
// results, as the sharded model assumes (each rank then computes the same residual stream). A rank that
// fails before a collective aborts the group, so the other ranks return an error instead of waiting
// for it forever.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::ir {

// One rank's handle on a group.
class Collective {
 public:
  virtual ~Collective() = default;
  virtual int ranks() const = 0;
  virtual int rank() const = 0;
  // Replaces `values` by their element-wise sum over the ranks; every rank passes the same count.
  virtual Status all_reduce_sum(std::vector<float>& values) = 0;
  // `all` becomes every rank's `mine` joined in rank order; every rank passes the same count.
  virtual Status all_gather(const std::vector<float>& mine, std::vector<float>& all) = 0;
};

class InProcessGroup {
 public:
  explicit InProcessGroup(int ranks);
  ~InProcessGroup();
  InProcessGroup(const InProcessGroup&) = delete;
  InProcessGroup& operator=(const InProcessGroup&) = delete;

  int ranks() const { return static_cast<int>(members_.size()); }
  Collective& member(int rank);
  // Wakes every rank waiting in a collective, and fails every later one, with `reason`.
  void abort(const std::string& reason);

 private:
  class Member;
  friend class Member;
  // Waits until all ranks arrived (each rank's pointer in slots_); an error once aborted.
  Status arrive();

  std::vector<std::unique_ptr<Member>> members_;
  std::vector<const std::vector<float>*> slots_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  std::string aborted_;
};

}  // namespace agentcompile::ir
