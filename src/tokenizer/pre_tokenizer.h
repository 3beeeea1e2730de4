// Pre-tokenization: cutting normalized text into the pieces BPE works on one at a time, as Hugging Face's
// Split / ByteLevel / Digits / Sequence pre-tokenizers do. Regexes run on PCRE2 (UTF + UCP, JIT when
// the build has it). Oniguruma, which Hugging Face uses, and PCRE2 disagree on what `\s` matches (PCRE2
// adds U+180E), so `\s` is rewritten to Oniguruma's white-space set before compiling.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::tokenizer {

// The split regexes of the families we ship fixtures for.
inline constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kLlama3SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// What a split does with the text its regex matches: keep it as its own piece (Isolated) or drop it
// (Removed). The text between matches always becomes pieces.
enum class SplitBehavior { kIsolated, kRemoved };

// One step of the pipeline, applied to every piece the previous step produced.
struct PreTokenizerStep {
  std::string pattern;        // PCRE2 syntax; empty: no split
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool add_prefix_space = false;  // ByteLevel's: prepend ' ' to a piece that does not start with one
};

class CompiledRegex;

class PreTokenizer {
 public:
  // Errors: kInvalidArgument naming the pattern and PCRE2's message when a pattern does not compile.
  static Expected<PreTokenizer> create(std::vector<PreTokenizerStep> steps);

  // Calls emit(std::string_view piece) for each non-empty piece of `text` (valid UTF-8), in order. A piece
  // is only valid during the call.
  template <typename Emit>
  void split(std::string_view text, Emit&& emit) const {
    run_step(0, text, emit);
  }

  bool empty() const { return steps_.empty(); }

 private:
  struct CompiledStep {
    std::shared_ptr<const CompiledRegex> regex;  // null: no split
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool add_prefix_space = false;
  };

  template <typename Emit>
  void run_step(size_t index, std::string_view piece, Emit& emit) const;

  // Calls on_piece(begin, end, is_match) for each match of `regex` in `text` and each gap between them.
  template <typename OnPiece>
  static void for_each_match(const CompiledRegex& regex, std::string_view text, OnPiece&& on_piece);
  // The next match at or after `start`: true and [begin, end), or false when none.
  static bool find(const CompiledRegex& regex, std::string_view text, size_t start, size_t& begin, size_t& end);

  std::vector<CompiledStep> steps_;
};

template <typename OnPiece>
void PreTokenizer::for_each_match(const CompiledRegex& regex, std::string_view text, OnPiece&& on_piece) {
  size_t pos = 0;
  size_t gap_start = 0;
  size_t begin = 0, end = 0;
  while (pos < text.size() && find(regex, text, pos, begin, end)) {
    if (end == begin) {  // an empty match splits nothing; step over one code point
      pos = begin + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (begin > gap_start) on_piece(gap_start, begin, false);
    on_piece(begin, end, true);
    gap_start = pos = end;
  }
  if (gap_start < text.size()) on_piece(gap_start, text.size(), false);
}

template <typename Emit>
void PreTokenizer::run_step(size_t index, std::string_view piece, Emit& emit) const {
  if (piece.empty()) return;
  if (index == steps_.size()) {
    emit(piece);
    return;
  }
  const CompiledStep& step = steps_[index];
  std::string prefixed;  // only filled for ByteLevel's add_prefix_space
  if (step.add_prefix_space && piece.front() != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  if (!step.regex) {
    run_step(index + 1, piece, emit);
    return;
  }
  for_each_match(*step.regex, piece, [&](size_t b, size_t e, bool is_match) {
    if (is_match && step.behavior == SplitBehavior::kRemoved) return;
    run_step(index + 1, piece.substr(b, e - b), emit);
  });
}

// Rewrites `\s` (and `\S` outside brackets) to the white-space set Oniguruma uses, leaving the rest of a
// pattern as written. Exposed for tests.
std::string with_oniguruma_white_space(std::string_view pattern);

}  // namespace agentcompile::tokenizer
