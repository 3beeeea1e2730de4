// Added tokens (special tokens such as <|im_end|> and plain added ones such as <think>): found in the
// text before pre-tokenization and mapped straight to their ids, as Hugging Face's AddedVocabulary does.
// Matching is leftmost-longest over a byte trie; lstrip / rstrip widen a match over the white space
// beside it, single_word rejects a match inside a word.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace agentcompile::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;     // dropped by decode(skip_special = true)
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in normalized text rather than in the raw input
  bool single_word = false;
};

class AddedTokenMatcher {
 public:
  struct Segment {
    size_t begin;
    size_t end;
    int32_t id;  // the added token's id, or -1 for text between matches
  };

  AddedTokenMatcher() = default;
  // Matches the tokens whose `normalized` flag equals `normalized`.
  AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized);

  bool empty() const { return tokens_.empty(); }
  // Cuts `text` into segments, in order, covering it; none is empty.
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  struct Node {
    int32_t token = -1;  // index into tokens_ of the token ending here
  };
  // The longest token starting at `pos`: its index and length, or -1.
  int32_t longest_at(std::string_view text, size_t pos, size_t& length) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;  // node 0 is the root
  std::unordered_map<uint64_t, uint32_t> edges_;  // (node << 8 | byte) -> child
  bool first_byte_[256] = {};
};

}  // namespace agentcompile::tokenizer
