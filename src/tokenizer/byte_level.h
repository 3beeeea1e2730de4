// GPT-2's byte-level alphabet: each of the 256 byte values is spelled as one printable code point
// (printable Latin-1 bytes as themselves, the rest from U+0100 up), so byte-level vocabularies can be
// written as text. Space is "Ġ" (U+0120), newline "Ċ" (U+010A).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace agentcompile::tokenizer::byte_level {

// The bytes a token spells when every code point in it belongs to the alphabet; nullopt otherwise
// (such tokens, e.g. added tokens with a space, stand for their own UTF-8 bytes). `token` must be valid
// UTF-8.
std::optional<std::string> token_bytes(std::string_view token);

// The alphabet spelling of raw bytes.
std::string spell(std::string_view bytes);

}  // namespace agentcompile::tokenizer::byte_level
