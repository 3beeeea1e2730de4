// PCRE2-backed splitting for the pre-tokenizer pipeline (see pre_tokenizer.h).
#include "tokenizer/pre_tokenizer.h"

#include <pcre2.h>

namespace agentcompile::tokenizer {

namespace {

// Oniguruma's \s under Unicode: the White_Space property.
constexpr std::string_view kWhiteSpaceItems =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// One match-data block per thread: pcre2_match_data is scratch space, and allocating it for every match
// would cost more than the match.
struct MatchData {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  ~MatchData() { pcre2_match_data_free(data); }
};

pcre2_match_data* thread_match_data() {
  thread_local MatchData holder;
  return holder.data;
}

}  // namespace

class CompiledRegex {
 public:
  CompiledRegex(pcre2_code* code, bool jit) : code_(code), jit_(jit) {}
  CompiledRegex(const CompiledRegex&) = delete;
  CompiledRegex& operator=(const CompiledRegex&) = delete;
  ~CompiledRegex() { pcre2_code_free(code_); }

  pcre2_code* code() const { return code_; }
  bool jit() const { return jit_; }

 private:
  pcre2_code* code_;
  bool jit_;
};

std::string with_oniguruma_white_space(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 's') {
        if (in_class) {
          out.append(kWhiteSpaceItems);
        } else {
          out.push_back('[');
          out.append(kWhiteSpaceItems);
          out.push_back(']');
        }
      } else if (next == 'S' && !in_class) {
        out.append("[^");
        out.append(kWhiteSpaceItems);
        out.push_back(']');
      } else {
        out.push_back(c);
        out.push_back(next);
      }
      ++i;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal, not the end of the class.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out.push_back(pattern[++i]);
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out.push_back(pattern[++i]);
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] == ':') {
      const size_t close = pattern.find(":]", i + 2);  // a POSIX class such as [:alpha:]
      if (close != std::string_view::npos) {
        out.append(pattern.substr(i, close + 2 - i));
        i = close + 1;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
  }
  return out;
}

Expected<PreTokenizer> PreTokenizer::create(std::vector<PreTokenizerStep> steps) {
  PreTokenizer result;
  for (const PreTokenizerStep& step : steps) {
    CompiledStep compiled;
    compiled.behavior = step.behavior;
    compiled.add_prefix_space = step.add_prefix_space;
    if (!step.pattern.empty()) {
      const std::string pattern = with_oniguruma_white_space(step.pattern);
      int error_code = 0;
      PCRE2_SIZE error_offset = 0;
      pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                       PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
      if (!code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error_code, message, sizeof(message));
        return error(ErrorCode::kInvalidArgument, "pre-tokenizer regex '" + step.pattern + "' does not compile: " +
                                                      reinterpret_cast<const char*>(message) + " (at offset " +
                                                      std::to_string(error_offset) + ")");
      }
      const bool jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
      compiled.regex = std::make_shared<const CompiledRegex>(code, jit);
    }
    if (compiled.regex || compiled.add_prefix_space) result.steps_.push_back(std::move(compiled));
  }
  return result;
}

bool PreTokenizer::find(const CompiledRegex& regex, std::string_view text, size_t start, size_t& begin, size_t& end) {
  pcre2_match_data* match = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = PCRE2_ERROR_JIT_STACKLIMIT;
  if (regex.jit()) rc = pcre2_jit_match(regex.code(), subject, text.size(), start, PCRE2_NO_UTF_CHECK, match, nullptr);
  // The interpreter keeps its backtracking state on the heap, so it copes where the JIT stack runs out.
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
    rc = pcre2_match(regex.code(), subject, text.size(), start, PCRE2_NO_UTF_CHECK, match, nullptr);
  // No match, or a resource limit hit: the rest of the text stays one piece.
  if (rc < 0) return false;
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
  begin = ovector[0];
  end = ovector[1];
  return true;
}

}  // namespace agentcompile::tokenizer
