// A cache of BPE results per pre-token: most words of real text repeat, and a lookup is far cheaper than
// the merge loop. Open addressing over one flat slot array; words and ids live in two arenas, so a hit
// costs a hash, one slot probe (rarely two) and a short compare, with no allocation. When half the slots
// are taken the cache starts over. Not thread-safe by itself: a Tokenizer takes `mutex` with try_lock
// and encodes without the cache when another thread holds it, so concurrent encodes never wait.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agentcompile::tokenizer {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;  // longer pieces are rare; not worth keeping
  static constexpr size_t kSlots = size_t{1} << 17;

  WordCache() : slots_(kSlots) {}

  // Appends the cached ids of `word` to `out`, or returns false.
  bool find(std::string_view word, std::vector<int32_t>& out) const {
    if (word.size() > kMaxWordBytes) return false;
    const uint64_t hash = hash_of(word);
    for (size_t i = hash & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
      const Slot& slot = slots_[i];
      if (slot.id_count == 0) return false;
      if (slot.hash == hash && slot.word_length == word.size() &&
          std::memcmp(words_.data() + slot.word_offset, word.data(), word.size()) == 0) {
        out.insert(out.end(), ids_.begin() + slot.ids_offset, ids_.begin() + slot.ids_offset + slot.id_count);
        return true;
      }
    }
  }

  void insert(std::string_view word, std::span<const int32_t> ids) {
    if (word.size() > kMaxWordBytes || ids.empty() || ids.size() > UINT16_MAX) return;
    if (used_ * 2 >= kSlots) clear();
    const uint64_t hash = hash_of(word);
    size_t i = hash & (kSlots - 1);
    while (slots_[i].id_count != 0) i = (i + 1) & (kSlots - 1);
    slots_[i] = Slot{hash, static_cast<uint32_t>(words_.size()), static_cast<uint32_t>(ids_.size()),
                     static_cast<uint16_t>(word.size()), static_cast<uint16_t>(ids.size())};
    words_.append(word);
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    ++used_;
  }

  std::mutex mutex;

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t word_offset = 0;
    uint32_t ids_offset = 0;
    uint16_t word_length = 0;
    uint16_t id_count = 0;  // 0: empty slot
  };

  // A multiply-xorshift hash over 8-byte chunks; words are short, so this beats a general string hash.
  static uint64_t hash_of(std::string_view word) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ word.size();
    size_t i = 0;
    for (; i + 8 <= word.size(); i += 8) {
      uint64_t chunk;
      std::memcpy(&chunk, word.data() + i, 8);
      h = (h ^ chunk) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, word.data() + i, word.size() - i);
    h = (h ^ tail) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
  }

  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    words_.clear();
    ids_.clear();
    used_ = 0;
  }

  std::vector<Slot> slots_;
  std::string words_;
  std::vector<int32_t> ids_;
  size_t used_ = 0;
};

}  // namespace agentcompile::tokenizer
