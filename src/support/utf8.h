// UTF-8 decoding and repair (the tokenizer's, and the check on outside text before it enters JSON:
// advisor replies, paths), with the replacement rule Python's bytes.decode('utf-8', errors='replace')
// and Rust's String::from_utf8_lossy share ("maximal subpart"): each maximal prefix of a well-formed
// sequence that cannot be completed becomes one U+FFFD, and a byte that starts no well-formed sequence
// becomes one U+FFFD by itself. So E0 80 gives two replacements, F0 9F 98 at the end gives one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace agentcompile::support::utf8 {

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_valid(std::string_view bytes);

// Appends `bytes` to `out` with every ill-formed part replaced by U+FFFD. When `final` is false an
// incomplete sequence at the very end (one that more bytes could still complete) is left unconsumed;
// returns how many bytes were consumed. With `final` true every byte is consumed.
size_t append_repaired(std::string& out, std::string_view bytes, bool final);

// `bytes` itself when valid, otherwise a repaired copy.
std::string repaired(std::string_view bytes);

// At most `max_chars` characters of `text`, cut between characters: when `text` is longer, its first
// characters followed by `marker`, the marker counted in `max_chars`. `text` should be valid UTF-8
// (repaired first); a cut then never makes it invalid. Every record of outside text (advisor replies,
// notes, errors) is cut with this.
std::string truncated(std::string_view text, size_t max_chars, std::string_view marker = "...");

// Appends the UTF-8 encoding of a scalar value (surrogates and values past U+10FFFF are not checked).
void append_code_point(std::string& out, uint32_t code_point);

// Decodes the code point starting at text[pos] of valid UTF-8 and advances pos past it.
inline uint32_t next_code_point(std::string_view text, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) {
    pos += 1;
    return lead;
  }
  if (lead < 0xE0) {
    const uint32_t cp = (uint32_t(lead & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
    pos += 2;
    return cp;
  }
  if (lead < 0xF0) {
    const uint32_t cp = (uint32_t(lead & 0x0F) << 12) | (uint32_t(byte(pos + 1) & 0x3F) << 6) | (byte(pos + 2) & 0x3F);
    pos += 3;
    return cp;
  }
  const uint32_t cp = (uint32_t(lead & 0x07) << 18) | (uint32_t(byte(pos + 1) & 0x3F) << 12) |
                      (uint32_t(byte(pos + 2) & 0x3F) << 6) | (byte(pos + 3) & 0x3F);
  pos += 4;
  return cp;
}

// Whether a code point has the Unicode White_Space property (what Rust's char::is_whitespace tests).
bool is_white_space(uint32_t code_point);

}  // namespace agentcompile::support::utf8
