// What a tokenizer is made of, as the loaders describe it (TokenizerSpec) and as encode/decode use it
// (TokenizerData, immutable and shared by every copy of a Tokenizer). Internal to src/tokenizer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/pre_tokenizer.h"

namespace agentcompile::frontend {
struct GgufFile;
}

namespace agentcompile::tokenizer {

// Everything a loader reads from tokenizer.json / tokenizer_config.json or from GGUF metadata.
struct TokenizerSpec {
  std::string source;  // file name(s), for messages
  TokenIds vocab;      // raw bytes -> id (byte-level spellings already decoded)
  std::vector<std::pair<std::string, std::string>> merges;  // raw bytes, in rank order
  bool ignore_merges = false;
  bool nfc = false;
  std::vector<PreTokenizerStep> pre_tokenizer;
  std::vector<AddedToken> added_tokens;
  std::vector<int32_t> prefix_ids;  // added around the text when add_special_tokens is set
  std::vector<int32_t> suffix_ids;
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
  std::string bos_token;  // text of the BOS token, for chat templates
  std::string chat_template;
};

struct TokenizerData {
  std::string source;
  BpeModel bpe;
  PreTokenizer pre_tokenizer;
  bool nfc = false;
  AddedTokenMatcher raw_added;         // added tokens matched in the input as given
  AddedTokenMatcher normalized_added;  // added tokens matched after normalization
  std::vector<int32_t> prefix_ids;
  std::vector<int32_t> suffix_ids;
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
  ChatTemplate chat_template;

  // Decoding: the bytes of token `id` are token_bytes[token_offsets[id] .. token_offsets[id + 1]).
  std::string token_bytes;
  std::vector<uint32_t> token_offsets;
  std::vector<uint8_t> token_flags;  // kKnownToken | kSpecialToken
  TokenIds added_by_content;         // added token text -> id

  static constexpr uint8_t kKnownToken = 1;
  static constexpr uint8_t kSpecialToken = 2;
};

// Reads a tokenizer.json (and optional tokenizer_config.json) into a spec. Errors name the file and key.
Expected<TokenizerSpec> read_tokenizer_json(const std::filesystem::path& file, const std::filesystem::path& config);

// Reads the tokenizer.ggml.* metadata of a GGUF file into a spec; `source` names the file in errors.
Expected<TokenizerSpec> read_gguf_tokenizer(const frontend::GgufFile& gguf, const std::string& source);

// Checks a spec and builds the tables encode/decode use (BPE merges, regexes, decode bytes).
Expected<std::shared_ptr<const TokenizerData>> build_tokenizer_data(TokenizerSpec spec);

}  // namespace agentcompile::tokenizer
