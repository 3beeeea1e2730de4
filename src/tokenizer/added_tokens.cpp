// Added-token matching (see added_tokens.h). The rules for lstrip, rstrip and single_word follow Hugging
// Face's AddedVocabulary::find_matches: white space is the Unicode White_Space property, a word character
// is one Rust's char::is_alphanumeric accepts (Alphabetic or a number).
#include "tokenizer/added_tokens.h"

#include <algorithm>

#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer {

namespace {

bool is_word_character(uint32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z');
  struct Pattern {
    pcre2_code* code = nullptr;
    Pattern() {
      int error_code = 0;
      PCRE2_SIZE offset = 0;
      code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(R"(\A[\p{Alphabetic}\p{N}])"), PCRE2_ZERO_TERMINATED,
                           PCRE2_UTF | PCRE2_UCP, &error_code, &offset, nullptr);
    }
  };
  static const Pattern pattern;
  if (!pattern.code) return false;
  std::string encoded;
  utf8::append_code_point(encoded, cp);
  pcre2_match_data* match = pcre2_match_data_create(1, nullptr);
  const int rc = pcre2_match(pattern.code, reinterpret_cast<PCRE2_SPTR>(encoded.data()), encoded.size(), 0, 0, match,
                             nullptr);
  pcre2_match_data_free(match);
  return rc >= 0;
}

// The code point that ends text[..end] (valid UTF-8, end > 0).
uint32_t code_point_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
  return utf8::next_code_point(text, start);
}

// Where the run of white space that ends text[..end] begins.
size_t white_space_run_start(std::string_view text, size_t end) {
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) --start;
    size_t pos = start;
    if (!utf8::is_white_space(utf8::next_code_point(text, pos))) break;
    end = start;
  }
  return end;
}

// Where the run of white space that starts at text[begin] ends.
size_t white_space_run_end(std::string_view text, size_t begin) {
  while (begin < text.size()) {
    size_t pos = begin;
    if (!utf8::is_white_space(utf8::next_code_point(text, pos))) break;
    begin = pos;
  }
  return begin;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens, bool normalized) {
  nodes_.emplace_back();
  for (const AddedToken& token : tokens) {
    if (token.normalized != normalized || token.content.empty()) continue;
    const int32_t index = static_cast<int32_t>(tokens_.size());
    tokens_.push_back(token);
    uint32_t node = 0;
    for (char c : token.content) {
      const uint64_t key = (uint64_t(node) << 8) | static_cast<uint8_t>(c);
      auto [it, inserted] = edges_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
      if (inserted) nodes_.emplace_back();
      node = it->second;
    }
    // Two added tokens with the same text: the first one listed keeps it.
    if (nodes_[node].token < 0) nodes_[node].token = index;
    first_byte_[static_cast<uint8_t>(token.content[0])] = true;
  }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t& length) const {
  int32_t found = -1;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = edges_.find((uint64_t(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == edges_.end()) break;
    node = it->second;
    if (nodes_[node].token >= 0) {
      found = nodes_[node].token;
      length = i + 1 - pos;
    }
  }
  return found;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t emitted = 0;  // end of the last segment pushed
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    size_t length = 0;
    const int32_t index = longest_at(text, pos, length);
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[index];
    size_t start = pos;
    size_t stop = pos + length;
    pos = stop;  // matches never overlap; a rejected one is skipped whole, as Hugging Face does
    if (token.single_word) {
      const bool word_before = start > 0 && is_word_character(code_point_before(text, start));
      size_t after = stop;
      const bool word_after = stop < text.size() && is_word_character(utf8::next_code_point(text, after));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) start = std::max(white_space_run_start(text, start), emitted);
    if (token.rstrip) stop = white_space_run_end(text, stop);
    if (start > emitted) out.push_back({emitted, start, -1});
    out.push_back({start, stop, token.id});
    emitted = pos = stop;
  }
  if (emitted < text.size()) out.push_back({emitted, text.size(), -1});
}

}  // namespace agentcompile::tokenizer
