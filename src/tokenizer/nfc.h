// Unicode Normalization Form C (canonical decomposition, canonical ordering, canonical composition),
// the normalizer Qwen's tokenizer.json names. Tables come from python/make_nfc_tables.py.
#pragma once

#include <string>
#include <string_view>

namespace agentcompile::tokenizer {

// Whether `text` (valid UTF-8) is certainly NFC already: true when it holds no code point that NFC could
// change or that could join its neighbour. A cheap scan; most text passes.
bool is_nfc_quick(std::string_view text);

// NFC of valid UTF-8.
std::string to_nfc(std::string_view text);

}  // namespace agentcompile::tokenizer
