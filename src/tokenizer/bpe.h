// Byte-level BPE: a vocabulary of byte strings and a ranked list of merges. A word (one pre-token, as raw
// bytes) starts as one symbol per byte; the adjacent pair with the lowest merge rank (the leftmost of
// equals) is joined until no pair has a merge, as Hugging Face's BPE model does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::tokenizer {

// Hashes both std::string and std::string_view keys, so lookups need no temporary string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// (left id, right id) -> (rank, merged id), open addressing with linear probing.
class MergeTable {
 public:
  struct Merge {
    uint32_t rank;
    int32_t merged;
  };

  void reserve(size_t count);
  // A later insert of the same pair replaces the earlier one (Hugging Face keeps the last, too).
  void insert(int32_t left, int32_t right, Merge merge);
  const Merge* find(int32_t left, int32_t right) const {
    if (slots_.empty()) return nullptr;
    const uint64_t key = pack(left, right);
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.key == key) return &slot.merge;
      if (slot.key == kEmpty) return nullptr;
    }
  }
  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static uint64_t pack(int32_t left, int32_t right) {
    return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
  }
  size_t slot_of(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

class BpeModel {
 public:
  // `vocab`: byte string -> id (byte-level spellings already turned back into bytes). `merges`: pairs of
  // byte strings in rank order. Bytes without a token of their own are dropped when encoding. Errors
  // (kParse) name the merge whose parts or result are not in the vocabulary, or say that most single
  // bytes are missing (not a byte-level vocabulary).
  static Expected<BpeModel> create(TokenIds vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                   bool ignore_merges, const std::string& source);

  // Appends the ids of one word (raw bytes, non-empty). `scratch` is reused between calls.
  struct Scratch {
    std::vector<int32_t> symbols;
    std::vector<uint32_t> ranks;
    std::vector<int32_t> next, prev;
  };
  void encode_word(std::string_view word, std::vector<int32_t>& out, Scratch& scratch) const;

  const TokenIds& vocab() const { return vocab_; }
  size_t merge_count() const { return merges_.size(); }

 private:
  void merge_short(std::vector<int32_t>& symbols, std::vector<uint32_t>& ranks) const;
  void merge_long(std::vector<int32_t>& out, Scratch& scratch) const;

  TokenIds vocab_;
  MergeTable merges_;
  std::array<int32_t, 256> byte_ids_{};
  bool ignore_merges_ = false;
};

}  // namespace agentcompile::tokenizer
