// The in-process collective group (see collective.h): a generation-counted barrier around slots that
// hold each rank's operand while the others read it.
#include "ir/collective.h"

namespace agentcompile::ir {

class InProcessGroup::Member final : public Collective {
 public:
  Member(InProcessGroup& group, int rank) : group_(group), rank_(rank) {}
  int ranks() const override { return group_.ranks(); }
  int rank() const override { return rank_; }

  Status all_reduce_sum(std::vector<float>& values) override {
    std::vector<float> sum(values.size(), 0.0f);
    AC_TRY(exchange(values, [&](const std::vector<float>& theirs, int rank) {
      if (theirs.size() != values.size()) return count_error("all_reduce", theirs.size(), values.size(), rank);
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += theirs[i];
      return Status::ok();
    }));
    values = std::move(sum);
    return Status::ok();
  }

  Status all_gather(const std::vector<float>& mine, std::vector<float>& all) override {
    all.clear();
    all.reserve(mine.size() * static_cast<size_t>(ranks()));
    return exchange(mine, [&](const std::vector<float>& theirs, int rank) {
      if (theirs.size() != mine.size()) return count_error("all_gather", theirs.size(), mine.size(), rank);
      all.insert(all.end(), theirs.begin(), theirs.end());
      return Status::ok();
    });
  }

 private:
  Status count_error(const char* op, size_t theirs, size_t mine, int rank) const {
    return error(ErrorCode::kMismatch, std::string(op) + ": rank " + std::to_string(rank) + " passed " +
                                                  std::to_string(theirs) + " values, rank " + std::to_string(rank_) +
                                                  " " + std::to_string(mine));
  }

  // Publishes `mine`, waits for every rank, reads every rank's operand in rank order, and waits again
  // so no rank changes its operand while another still reads it.
  template <typename Read>
  Status exchange(const std::vector<float>& mine, Read read) {
    {
      std::lock_guard lock(group_.mutex_);
      group_.slots_[static_cast<size_t>(rank_)] = &mine;
    }
    AC_TRY(group_.arrive());
    Status status = Status::ok();
    for (int r = 0; r < ranks() && status.is_ok(); ++r) status = read(*group_.slots_[static_cast<size_t>(r)], r);
    AC_TRY(group_.arrive());
    return status;
  }

  InProcessGroup& group_;
  int rank_;
};

InProcessGroup::InProcessGroup(int ranks) : slots_(static_cast<size_t>(ranks), nullptr) {
  for (int r = 0; r < ranks; ++r) members_.push_back(std::make_unique<Member>(*this, r));
}

InProcessGroup::~InProcessGroup() = default;

Collective& InProcessGroup::member(int rank) { return *members_.at(static_cast<size_t>(rank)); }

void InProcessGroup::abort(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (aborted_.empty()) aborted_ = reason.empty() ? "aborted" : reason;
  arrived_.notify_all();
}

Status InProcessGroup::arrive() {
  std::unique_lock lock(mutex_);
  auto aborted = [&] {
    return error(ErrorCode::kMismatch, "collective group aborted: " + aborted_);
  };
  if (!aborted_.empty()) return aborted();
  const uint64_t generation = generation_;
  if (++waiting_ == ranks()) {
    waiting_ = 0;
    ++generation_;
    arrived_.notify_all();
    return Status::ok();
  }
  arrived_.wait(lock, [&] { return generation_ != generation || !aborted_.empty(); });
  if (generation_ == generation) return aborted();
  return Status::ok();
}

}  // namespace agentcompile::ir
