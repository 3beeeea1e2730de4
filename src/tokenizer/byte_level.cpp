// The byte <-> code point tables of GPT-2's bytes_to_unicode().
#include "tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer::byte_level {

namespace {

struct Alphabet {
  std::array<uint16_t, 256> byte_to_code_point{};
  std::array<int16_t, 324> code_point_to_byte{};  // -1: not in the alphabet; every spelling is < U+0144

  Alphabet() {
    code_point_to_byte.fill(-1);
    const auto kept = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const int cp = kept(b) ? b : next++;
      byte_to_code_point[b] = static_cast<uint16_t>(cp);
      code_point_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet table;
  return table;
}

}  // namespace

std::optional<std::string> token_bytes(std::string_view token) {
  const Alphabet& table = alphabet();
  std::string out;
  out.reserve(token.size());
  for (size_t pos = 0; pos < token.size();) {
    const uint32_t cp = utf8::next_code_point(token, pos);
    if (cp >= table.code_point_to_byte.size() || table.code_point_to_byte[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(table.code_point_to_byte[cp]));
  }
  return out;
}

std::string spell(std::string_view bytes) {
  const Alphabet& table = alphabet();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::append_code_point(out, table.byte_to_code_point[static_cast<uint8_t>(c)]);
  return out;
}

}  // namespace agentcompile::tokenizer::byte_level
