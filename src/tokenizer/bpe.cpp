// The BPE merge loop. Short words (almost all of them) use a flat array of pair ranks: find the lowest,
// join, refresh its two neighbours. Long words would make that quadratic, so they use a linked list
// and a priority queue of candidate merges ordered by (rank, position), checking each popped candidate
// is still current; both pick the same merge at every step.
#include "tokenizer/bpe.h"

#include <bit>
#include <queue>

namespace agentcompile::tokenizer {

namespace {

constexpr uint32_t kNoMerge = ~uint32_t{0};
constexpr size_t kShortWord = 64;

}  // namespace

void MergeTable::reserve(size_t count) {
  size_t capacity = 16;
  while (capacity < count * 2) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  shift_ = 64 - std::countr_zero(capacity);
  size_ = 0;
  for (const Slot& slot : old)
    if (slot.key != kEmpty) insert(int32_t(slot.key >> 32), int32_t(uint32_t(slot.key)), slot.merge);
}

void MergeTable::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

void MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const uint64_t key = pack(left, right);
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) {
      slot.merge = merge;
      return;
    }
    if (slot.key == kEmpty) {
      slot.key = key;
      slot.merge = merge;
      ++size_;
      return;
    }
  }
}

Expected<BpeModel> BpeModel::create(TokenIds vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                    bool ignore_merges, const std::string& source) {
  BpeModel model;
  model.ignore_merges_ = ignore_merges;
  // A byte without a token is dropped from the text, as Hugging Face does without an unk token
  // (SmolLM2 lacks a few control characters). A vocabulary missing most bytes is not byte-level at all.
  int missing = 0;
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    auto it = vocab.find(std::string_view(&c, 1));
    model.byte_ids_[b] = it == vocab.end() ? -1 : it->second;
    missing += it == vocab.end();
  }
  if (missing > 128)
    return error(ErrorCode::kParse, source + ": the vocabulary spells only " + std::to_string(256 - missing) +
                                        " of the 256 bytes; it is not a byte-level BPE vocabulary");
  model.merges_.reserve(merges.size());
  const auto shown = [](const std::pair<std::string, std::string>& merge) {
    return "'" + merge.first + " " + merge.second + "'";
  };
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& merge = merges[rank];
    auto left = vocab.find(merge.first);
    auto right = vocab.find(merge.second);
    if (left == vocab.end() || right == vocab.end())
      return error(ErrorCode::kParse, source + ": merge " + std::to_string(rank) + " " + shown(merge) + " names '" +
                                          (left == vocab.end() ? merge.first : merge.second) +
                                          "', which is not in the vocabulary");
    auto merged = vocab.find(merge.first + merge.second);
    if (merged == vocab.end())
      return error(ErrorCode::kParse, source + ": merge " + std::to_string(rank) + " " + shown(merge) +
                                          " makes a token that is not in the vocabulary");
    model.merges_.insert(left->second, right->second, {static_cast<uint32_t>(rank), merged->second});
  }
  model.vocab_ = std::move(vocab);
  return model;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out, Scratch& scratch) const {
  if (word.size() == 1) {
    if (const int32_t id = byte_ids_[static_cast<uint8_t>(word[0])]; id >= 0) out.push_back(id);
    return;
  }
  if (ignore_merges_) {
    // Llama 3: a word that is itself in the vocabulary is taken whole, whatever the merges would make.
    if (auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t>& symbols = scratch.symbols;
  symbols.clear();
  for (char c : word)
    if (const int32_t id = byte_ids_[static_cast<uint8_t>(c)]; id >= 0) symbols.push_back(id);
  if (symbols.empty()) return;
  if (symbols.size() > kShortWord) {
    merge_long(out, scratch);
    return;
  }
  merge_short(symbols, scratch.ranks);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeModel::merge_short(std::vector<int32_t>& symbols, std::vector<uint32_t>& ranks) const {
  const auto rank_of = [&](size_t i) {
    const MergeTable::Merge* merge = merges_.find(symbols[i], symbols[i + 1]);
    return merge ? merge->rank : kNoMerge;
  };
  ranks.resize(symbols.size() - 1);
  for (size_t i = 0; i + 1 < symbols.size(); ++i) ranks[i] = rank_of(i);
  while (symbols.size() > 1) {
    size_t best = 0;
    for (size_t i = 1; i < ranks.size(); ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == kNoMerge) break;
    symbols[best] = merges_.find(symbols[best], symbols[best + 1])->merged;
    symbols.erase(symbols.begin() + best + 1);
    ranks.erase(ranks.begin() + best);
    if (best > 0) ranks[best - 1] = rank_of(best - 1);
    if (best < ranks.size()) ranks[best] = rank_of(best);
  }
}

void BpeModel::merge_long(std::vector<int32_t>& out, Scratch& scratch) const {
  struct Candidate {
    uint32_t rank;
    int32_t position;
    int32_t merged;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : position > other.position;
    }
  };
  std::vector<int32_t>& symbols = scratch.symbols;  // -1 once merged into its left neighbour
  std::vector<int32_t>& next = scratch.next;
  std::vector<int32_t>& prev = scratch.prev;
  const int32_t n = static_cast<int32_t>(symbols.size());
  next.resize(n);
  prev.resize(n);
  for (int32_t i = 0; i < n; ++i) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto propose = [&](int32_t left) {
    if (left < 0 || next[left] < 0) return;
    if (const MergeTable::Merge* merge = merges_.find(symbols[left], symbols[next[left]]))
      queue.push({merge->rank, left, merge->merged});
  };
  for (int32_t i = 0; i + 1 < n; ++i) propose(i);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    const int32_t left = top.position;
    if (symbols[left] < 0 || next[left] < 0) continue;
    const int32_t right = next[left];
    // Stale when either side has changed since it was proposed: the pair would now make another token.
    const MergeTable::Merge* merge = merges_.find(symbols[left], symbols[right]);
    if (!merge || merge->merged != top.merged) continue;
    symbols[left] = top.merged;
    symbols[right] = -1;
    next[left] = next[right];
    if (next[left] >= 0) prev[next[left]] = left;
    propose(prev[left]);
    propose(left);
  }
  for (int32_t i = 0; i >= 0; i = next[i]) out.push_back(symbols[i]);
}

}  // namespace agentcompile::tokenizer
